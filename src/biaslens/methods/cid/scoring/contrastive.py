"""What the CID experiments share: decoding options and CID in both directions of a pair."""

from __future__ import annotations

from typing import Annotated

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from biaslens.common.contrastive_defaults import MAX_NEW_TOKENS, TOP_K, lambda_problem
from biaslens.common.options import FLAG, Flag
from biaslens.models.base import LM
from biaslens.models.requests import ContrastiveGenerateRequest
from biaslens.progress import Progress

DEFAULT_STOP = (".", "\n")


class DecodingSettings(BaseModel):
    """Decoding options of a CID experiment (greedy, as in the paper)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    lams: Annotated[tuple[float, ...], Flag("--lam")] = Field(
        default=(0.0, 5.0, 50.0),
        description="λ values, e.g. --lam 0 5 50 (0 is plain greedy decoding).",
    )
    top_k: Annotated[
        int, Flag("--top-k-tokens", "--top-k", deprecated={"--top-k": "--top-k-tokens"})
    ] = Field(default=TOP_K, description="Restrict to the top-K tokens of p(·|x) (paper: 50).")
    max_new_tokens: Annotated[int, FLAG] = Field(
        default=MAX_NEW_TOKENS, ge=1, description="At most N new tokens."
    )
    stop: Annotated[tuple[str, ...], Flag(commas=False)] = Field(
        default=DEFAULT_STOP, description="Stop strings."
    )

    @field_validator("top_k")
    @classmethod
    def _check_top_k(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"top_k (the top-K tokens of p(·|x)) must be >= 1, got {value}")
        return value

    @field_validator("lams")
    @classmethod
    def _check_lams(cls, values: tuple[float, ...]) -> tuple[float, ...]:
        if not values:
            raise ValueError("give at least one λ")
        for value in values:
            if (problem := lambda_problem(value)) is not None:
                raise ValueError(problem)
        return tuple(sorted(set(values)))


def decode_both_directions(
    lm: LM, pairs: pd.DataFrame, settings: DecodingSettings, progress: Progress, label: str
) -> pd.DataFrame:
    """CID(x; x', λ) and CID(x'; x, λ) for every pair (columns ``pair``, ``x``, ``x_prime``)
    and λ, in one batched call. Returns one row per pair, λ and direction (``forward``: x is
    the input, ``backward``: x' is), with the continuation and why it ended."""
    rows = []
    for pair in pairs.itertuples(index=False):
        for lam in settings.lams:
            rows.append((pair.pair, lam, "forward", pair.x, pair.x_prime))
            rows.append((pair.pair, lam, "backward", pair.x_prime, pair.x))
    table = pd.DataFrame(rows, columns=["pair", "lam", "direction", "input", "contrast"])
    return decode(lm, table, settings, progress, label, strip=True)


def decode(
    lm: LM,
    table: pd.DataFrame,
    settings: DecodingSettings,
    progress: Progress,
    label: str,
    strip: bool = False,
    **sampling,
) -> pd.DataFrame:
    """CID(input; contrast, λ) for each row of ``table`` (columns ``lam``, ``input``,
    ``contrast``), in one batched call (``sampling``: ``do_sample``, ``temperature``, ``seed``
    of the request); the table with each continuation (stripped of its outer white space when
    ``strip``), its tokens and why it ended."""
    requests = [
        ContrastiveGenerateRequest(
            x=row.input,
            x_prime=row.contrast,
            lam=row.lam,
            max_new_tokens=settings.max_new_tokens,
            top_k=settings.top_k,
            stop=settings.stop,
            **sampling,
        )
        for row in table.itertuples(index=False)
    ]
    tick = progress.task(f"{label} ({lm.identity.name})", len(requests))
    results = lm.contrastive_generate(requests, progress=tick)
    table = table.copy()
    table["continuation"] = [r.text.strip() if strip else r.text for r in results]
    table["num_tokens"] = [r.num_tokens for r in results]
    table["finish_reason"] = [r.finish_reason for r in results]
    return table
