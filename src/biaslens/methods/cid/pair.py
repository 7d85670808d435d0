"""Contrastive Input Decoding of one pair of inputs (CID paper, Section 3, Eq. 1): the
continuation likely given x and unlikely given x', and the other way round, for each λ on the
grid (λ = 0 is plain greedy decoding). ``biaslens cid`` runs it without a run folder's options.

Every (direction, λ) is one ``contrastive_generate`` request, all answered in one batch through
the run's request cache. The decoding defaults are the CID audits' (greedy, λ 0, 5 and 50 as in
the paper's Fig. 1, the top 50 tokens, at most 20 new tokens, stopping at a full stop or a new
line).
"""

from __future__ import annotations

import hashlib
from typing import Annotated

import pandas as pd
from pydantic import Field, field_validator

from biaslens.common.contrastive_defaults import MAX_TEMPERATURE, MIN_TEMPERATURE
from biaslens.common.options import FLAG, Flag
from biaslens.common.seeds import Seed
from biaslens.framework.hooks import AuditRole
from biaslens.framework.options import filled
from biaslens.framework.registry import Headline, MethodOutput, MethodSpec, RunContext, register
from biaslens.framework.settings import MethodSettings, ModelName, validated
from biaslens.methods.cid.outputs import PAIR
from biaslens.methods.cid.scoring.contrastive import DecodingSettings, decode
from biaslens.models.base import LM
from biaslens.store.paths import safe_name

DIRECTIONS = {"forward": "CID(x; x')", "backward": "CID(x'; x)"}


class PairSettings(MethodSettings):
    """The pair, how it is decoded, and whether both directions are."""

    x: Annotated[str, Flag("--x")] = Field(description="The input x.")
    x_prime: Annotated[str, Flag("--x-prime")] = Field(description="The contrastive input x'.")
    decoding: Annotated[DecodingSettings, Flag(nested="fill")] = DecodingSettings()
    model: ModelName = "default"
    one_way: Annotated[bool, FLAG] = Field(
        default=False, description="Only CID(x; x'), not CID(x'; x)."
    )
    sample: Annotated[bool, FLAG] = Field(
        default=False, description="Sample from p̃ instead of greedy."
    )
    temperature: Annotated[float, FLAG] = Field(
        default=1.0, ge=MIN_TEMPERATURE, le=MAX_TEMPERATURE, description="Sampling temperature."
    )
    seed: Annotated[Seed, FLAG] = Field(default=0, description="Sampling seed.")

    @field_validator("x", "x_prime")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("--x and --x-prime must be non-empty")
        return value


def make_settings(**values) -> PairSettings:
    """Settings from the command line's names: the decoding options (λ grid, top-K, token
    budget, stop strings) fill the decoding settings; every default is the settings'."""
    return validated(PairSettings, filled(PairSettings, values))


def prepare(settings: PairSettings, lm: LM) -> PairSettings:
    lm.require("contrastive_generate")
    return settings


def run(ctx: RunContext, settings: PairSettings) -> MethodOutput:
    """Both directions (or one) at every λ, in one batch."""
    pairs = [("forward", settings.x, settings.x_prime)]
    if not settings.one_way:
        pairs.append(("backward", settings.x_prime, settings.x))
    rows = [(lam, *pair) for lam in settings.decoding.lams for pair in pairs]
    table = decode(
        ctx.lm,
        pd.DataFrame(rows, columns=["lam", "direction", "input", "contrast"]),
        settings.decoding,
        ctx.progress,
        "CID",
        do_sample=settings.sample,
        temperature=settings.temperature,
        seed=settings.seed,
    )
    return MethodOutput(
        metrics={"num_continuations": len(table)},
        tables={"continuations": table},
        notes=[f"x:  {settings.x}", f"x': {settings.x_prime}"],
    )


def _by_lambda(table: pd.DataFrame) -> pd.DataFrame:
    """λ down, the directions across (as the paper's Table 1)."""
    wide = table.pivot(index="lam", columns="direction", values="continuation")
    wide = wide.reindex(columns=[d for d in DIRECTIONS if d in wide]).rename(columns=DIRECTIONS)
    wide.index = [f"{lam:g}" for lam in wide.index]
    return wide.rename_axis("λ").reset_index()


def _folder(settings: PairSettings) -> str:
    """``MODEL-HASH``: one folder per model and pair (the pair's words are not a folder name)."""
    digest = hashlib.sha256(f"{settings.x}\x00{settings.x_prime}".encode()).hexdigest()[:8]
    return f"{safe_name(settings.model)}-{digest}"


SPEC = register(
    MethodSpec(
        audit=AuditRole(skip="decodes one pair of inputs you give it (biaslens cid X X_PRIME)"),
        name="cid",
        title="Contrastive Input Decoding of one pair of inputs: continuations likely given x but "
        "not given x', per λ",
        settings=PairSettings,
        body=run,
        make_settings=make_settings,
        prepare=prepare,
        run_name=_folder,
        description="All (direction, λ) combinations run in one batch. Writes continuations.csv "
        "(per λ and direction: the continuation, its tokens and why it ended) and summary.json.",
        headlines=(
            Headline(
                "continuations",
                "CID",
                view=_by_lambda,
                legend={
                    "*": "the continuation decoded in this direction: CID(x; x') continues x "
                    "contrasted with x', CID(x'; x) the reverse",
                },
            ),
        ),
        outputs=PAIR,
        presets={"paper": {}},  # greedy, λ 0, 5, 50 and top-K 50: the paper's Fig. 1
        shortcut="cid",
    )
)
