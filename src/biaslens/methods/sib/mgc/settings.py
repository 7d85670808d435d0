"""The settings of ``sib-mgc`` (SIB Method 1 on the MGC set), each with its command-line flag,
and the lm-eval task's."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from biaslens.common.options import FLAG, Flag
from biaslens.framework.settings import (
    CiLevel,
    Limit,
    MethodSettings,
    MinPronounMass,
    ModelName,
    PronounScoring,
    RandomSeed,
    validated,
)
from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.metrics.sib import MIN_PRONOUN_MASS
from biaslens.scoring.sampled import DEFAULT_SAMPLES, Allocation, Samples

WKind = Literal["dates", "places"]
"""An injected W kind (SIB §3.1)."""


class TaskSettings(BaseModel):
    """What the ``biaslens_mgc`` lm-eval task takes besides ``--limit`` (one prompt and one W
    kind per task: lm-eval aggregates over a task's inputs); validated as :class:`MGCSettings`'
    ``prompts`` and ``w_kinds`` when the task is written."""

    prompt: Annotated[str, FLAG] = Field(default="A", description="MGC prompt: A, B or C.")
    w_kind: Annotated[WKind, Flag("--w")] = Field(
        default="dates", description="MGC W kind: dates or places."
    )


class MGCSettings(MethodSettings):
    """Settings that decide an MGC run's results (validated on entry)."""

    model: ModelName = "default"
    mode: PronounScoring = "exact"
    samples: Samples = DEFAULT_SAMPLES
    allocation: Allocation = "adaptive"
    prompts: Annotated[tuple[str, ...] | None, Flag("--prompt", "-p", shown="A")] = Field(
        default=None,
        description="Instruction prompt(s) A B C of App. D.2 for causal/seq2seq models. Not "
        "allowed with masked LMs.",
    )
    w_kinds: Annotated[tuple[WKind, ...], Flag("--w")] = Field(
        default=("dates", "places"), description="Injected W values: dates places."
    )
    date_grid: Annotated[Literal["code", "rounded", "text"], FLAG] = Field(
        default="code",
        description="code: linspace(1801, 2016, 30) cut to whole years, as the reference code; "
        "rounded: the same points rounded; text: 1801-2001 as the paper's text.",
    )
    generation_tokens: Annotated[int, FLAG] = Field(
        default=20,
        ge=1,
        le=256,
        description="Paper scoring: greedy steps of causal/seq2seq models (the reference code "
        "used 10 for Method 1: --preset paper).",
    )
    limit: Limit = Field(
        default=None,
        description="Sentence frames (verb × life stage) kept, each at every W value (seeded; 0: "
        "all 60).",
    )
    paper_readout: Annotated[bool, FLAG] = Field(
        default=False,
        description="Also read every input as the SIB reference code did (the pronouns among "
        "the top 5 at the slot; greedy generation of 10 tokens for causal and seq2seq models) "
        "and fit its lines beside this run's: the known models' own readout, so that they are "
        "compared like with like.",
    )
    min_pronoun_mass: MinPronounMass = MIN_PRONOUN_MASS
    seed: RandomSeed = 0
    ci_level: CiLevel

    @field_validator("prompts")
    @classmethod
    def _known_prompts(cls, value):
        if value is not None:
            unknown = [p for p in value if p not in mgc.PROMPTS]
            if unknown or not value:
                raise ValueError(f"prompts must be among {', '.join(mgc.PROMPTS)}, got {value}")
            return tuple(dict.fromkeys(value))
        return value

    @field_validator("w_kinds")
    @classmethod
    def _some_w_kind(cls, value):
        if not value:
            raise ValueError("at least one W kind (dates, places) is needed")
        return tuple(dict.fromkeys(value))


def make_settings(**values) -> MGCSettings:
    """Settings from keyword values (one-line errors), as the runner builds them."""
    return validated(MGCSettings, values)
