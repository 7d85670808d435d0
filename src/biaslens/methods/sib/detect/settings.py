"""The settings of ``sib-detect`` (SIB Method 2) and their command-line options."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from biaslens.errors import BiaslensError
from biaslens.framework import options as O
from biaslens.framework.settings import CiLevel, Limit, MethodSettings, validated
from biaslens.metrics.sib import MIN_PRONOUN_MASS, MinPronounMass
from biaslens.scoring.sampled import DEFAULT_SAMPLES, Samples

SETS = ("extended", "simplified")
SetName = Literal["extended", "simplified", "simplified-reference"]
"""``simplified``: biaslens's rewrite (51 occupations, in the package); ``simplified-reference``:
the reference repository's own 144 sentences (``biaslens datasets download sib-simplified``),
the set the paper's Table 3 was computed on."""


class DetectSettings(MethodSettings):
    """Settings that decide a Method 2 run's results."""

    model: str = "default"
    sets: tuple[SetName, ...] = SETS
    mode: Literal["exact", "paper", "sampled"] = "exact"
    samples: Samples = DEFAULT_SAMPLES
    date_format: Literal["comma", "colon"] = Field(
        default="comma", description="In {DATE}, sentence (comma) or In {DATE}: Sentence (colon)"
    )
    generation_tokens: int = Field(default=20, ge=1, le=256, description="paper-mode greedy steps")
    sweep: tuple[str, ...] = Field(
        default=(), description="sentence ids scored on the full date grid (Fig. 4)"
    )
    earliest: int = Field(default=1901, ge=0, le=9999)
    latest: int = Field(default=2016, ge=0, le=9999)
    average_n: int = Field(default=1, ge=1, description="average the first/last N grid dates")
    grid_size: int = Field(default=30, ge=2, description="date grid between earliest and latest")
    threshold: float = Field(default=0.5, ge=0, le=100)
    empty_mass: Literal["exclude", "zero"] = Field(
        default="exclude",
        description="sentences with no pronoun mass at a date: excluded from TPR/TNR and "
        "counted (exclude), or share 0 via the reference's f/(f+m+n+1e-5) on masses in "
        "percent (zero)",
    )
    limit: Limit = Field(default=None, description="occupations (first N, sorted)")
    min_pronoun_mass: MinPronounMass = MIN_PRONOUN_MASS
    ci_level: CiLevel = 0.95

    @field_validator("latest")
    @classmethod
    def _ordered(cls, latest, info):
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


OPTIONS = (
    O.MODEL,
    O.Option("sets", "--set", help="extended simplified (App. H and H.1).", multiple=True),
    O.PRONOUN_SCORING,
    O.MIN_PRONOUN_MASS,
    O.SAMPLES,
    O.Option("earliest", help="Earliest date.", type=int),
    O.Option("latest", help="Latest date.", type=int),
    O.Option(
        "average_n",
        help="Average the first/last N dates of a grid instead of single dates.",
        type=int,
    ),
    O.Option("threshold", help="Unspecified when metric > this (pp).", type=float),
    O.Option(
        "empty_mass",
        help="Sentences with no pronoun mass at a date: exclude (no verdict, counted) or "
        "zero (the reference's share of 0).",
    ),
    O.Option("limit", help="Only the first N occupations (sorted; 0: all).", type=int),
    O.CI_LEVEL,
    O.Option(
        "date_format",
        help="comma: 'In 1901, the sentence'; colon: 'In 1901: The sentence' as the "
        "reference code.",
    ),
    O.GENERATION_TOKENS.but(help="Paper scoring: greedy steps."),
    O.Option(
        "sweep",
        help="Sentence ids (e.g. doctor_man_1) also scored at every date of the grid (Fig. 4).",
        multiple=True,
    ),
    O.Option(
        "show_occupation",
        help="Print the per-sentence table (Table 2) for these.",
        multiple=True,
        display=True,
    ),
)
"""The options of ``biaslens run sib-detect``."""
