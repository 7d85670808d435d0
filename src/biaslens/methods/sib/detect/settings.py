"""The settings of ``sib-detect`` (SIB Method 2), each with its command-line flag."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from biaslens.common.options import FLAG, Flag, Option
from biaslens.errors import BiaslensError
from biaslens.framework.settings import (
    CiLevel,
    Limit,
    MethodSettings,
    MinPronounMass,
    ModelName,
    PronounScoring,
    validated,
)
from biaslens.methods.sib.metrics.sib import MIN_PRONOUN_MASS
from biaslens.scoring.sampled import DEFAULT_SAMPLES, Samples

SETS = ("extended", "simplified")
SetName = Literal["extended", "simplified", "simplified-reference"]
"""``simplified``: biaslens's rewrite (51 occupations, in the package); ``simplified-reference``:
the reference repository's own 144 sentences (``biaslens datasets download sib-simplified``),
the set the paper's Table 3 was computed on."""


Date = Annotated[int, Field(ge=0, le=9999)]
"""A year of the date grid."""
Threshold = Annotated[
    float,
    FLAG,
    Field(default=0.5, ge=0, le=100, description="Unspecified when metric > this (pp)."),
]
"""Method 2's decision threshold on the metric, in percentage points (SIB §4.2)."""


class DetectSettings(MethodSettings):
    """Settings that decide a Method 2 run's results."""

    model: ModelName = "default"
    sets: Annotated[tuple[SetName, ...], Flag("--set")] = Field(
        default=SETS, description="extended simplified (App. H and H.1)."
    )
    mode: PronounScoring = "exact"
    samples: Samples = DEFAULT_SAMPLES
    date_format: Annotated[Literal["comma", "colon"], FLAG] = Field(
        default="comma",
        description="comma: 'In 1901, the sentence'; colon: 'In 1901: The sentence' as the "
        "reference code.",
    )
    generation_tokens: Annotated[int, FLAG] = Field(
        default=20, ge=1, le=256, description="Paper scoring: greedy steps."
    )
    sweep: Annotated[tuple[str, ...], FLAG] = Field(
        default=(),
        description="Sentence ids (e.g. doctor_man_1) also scored at every date of the grid "
        "(Fig. 4).",
    )
    earliest: Annotated[Date, FLAG] = Field(default=1901, description="Earliest date.")
    latest: Annotated[Date, FLAG] = Field(default=2016, description="Latest date.")
    average_n: Annotated[int, FLAG] = Field(
        default=1,
        ge=1,
        description="Average the first/last N dates of a grid instead of single dates.",
    )
    grid_size: int = Field(default=30, ge=2, description="date grid between earliest and latest")
    threshold: Threshold
    empty_mass: Annotated[Literal["exclude", "zero"], FLAG] = Field(
        default="exclude",
        description="Sentences with no pronoun mass at a date: exclude (no verdict, counted) or "
        "zero (the reference's share of 0: f/(f+m+n+1e-5) on masses in percent).",
    )
    limit: Limit = Field(default=None, description="Only the first N occupations (sorted; 0: all).")
    min_pronoun_mass: MinPronounMass = MIN_PRONOUN_MASS
    ci_level: CiLevel

    @field_validator("latest")
    @classmethod
    def _ordered(cls, latest, info):
        return _after_earliest(latest, info)


class StoredSettings(BaseModel):
    """The settings of ``biaslens metrics sib-detect`` (Method 2 from stored pronoun shares):
    a run's threshold and dates, each date by default the first or last one stored."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    threshold: Threshold
    earliest: Annotated[Date | None, FLAG] = Field(
        default=None, description="Earliest date (default: the first stored)."
    )
    latest: Annotated[Date | None, FLAG] = Field(
        default=None, description="Latest date (default: the last stored)."
    )

    @field_validator("latest")
    @classmethod
    def _ordered(cls, latest, info):
        return latest if latest is None else _after_earliest(latest, info)


def _after_earliest(latest: int, info) -> int:
    """The latest date, which must come after the earliest."""
    earliest = info.data.get("earliest")
    if earliest is not None and latest <= earliest:
        raise ValueError(f"latest date must be after the earliest ({earliest})")
    return latest


def make_settings(**values) -> DetectSettings:
    settings = validated(DetectSettings, values)
    if 2 * settings.average_n > settings.grid_size:
        raise BiaslensError(
            f"invalid average_n: 2 x {settings.average_n} dates exceed the grid of "
            f"{settings.grid_size}"
        )
    return settings


SHOW_OCCUPATION = Option(
    "show_occupation",
    help="Print the per-sentence table (Table 2) for these.",
    multiple=True,
    display=True,
)
"""What ``biaslens run sib-detect`` prints after a run (not a setting)."""
