"""Settings of the methods: validated on entry with one-line, field-naming errors.

Every method's settings derive from :class:`MethodSettings`: frozen, no unknown fields, and no
NaN or infinite numbers anywhere (an ``inf`` threshold or λ would produce NaN metrics).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from biaslens.common.options import FLAG, Flag
from biaslens.common.seeds import Seed
from biaslens.data.sources import sha256_file
from biaslens.errors import BiaslensError
from biaslens.metrics.intervals import MIN_REPLICATES
from biaslens.metrics.intervals.core import LEVEL


def _zero_means_all(value: int | None) -> int | None:
    return None if value == 0 else value


Limit = Annotated[
    int | None,
    Field(ge=0, description="Keep at most N (seeded; 0: all)."),
    AfterValidator(_zero_means_all),
    FLAG,
]
"""A ``--limit``-like setting: N keeps at most N; 0 and None (not given) both mean all, and
are recorded as None, in every method."""

M = TypeVar("M", bound=BaseModel)


MAX_MODEL_NAME = 4096
"""The longest model name or path accepted (a path longer than the file system allows is an
error there anyway; a 5 MB line of a models file is not a model)."""


class MethodSettings(BaseModel):
    """Base of every method's settings: the values that decide a run's results."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    _prepared_for: Any = PrivateAttr(default=None)
    """A weak reference to the loaded model :meth:`MethodSpec.for_model` prepared these
    settings for: they are final for it, and a second call returns them as they are."""

    def __eq__(self, other: object) -> bool:
        """Settings are equal when their values are (which model prepared them is no value)."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = BaseModel.__hash__

    def __getstate__(self) -> dict[Any, Any]:
        """A pickled copy (sent to a worker process) leaves the model behind: there, any model
        is another one, and checks the settings anew."""
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private and private.get("_prepared_for") is not None:
            state["__pydantic_private__"] = {**private, "_prepared_for": None}
        return state

    @field_validator("model", check_fields=False)
    @classmethod
    def _model_is_named(cls, value: str) -> str:
        """An empty or blank model name must not quietly become the default model."""
        if not isinstance(value, str) or not value.strip():
            raise ValueError(
                "the model name is empty; give a registered name, a folder or a hub name"
            )
        if value != value.strip():
            raise ValueError("the model name has leading or trailing spaces")
        if len(value) > MAX_MODEL_NAME:
            raise ValueError(
                f"the model name is {len(value):,} characters (at most {MAX_MODEL_NAME:,})"
            )
        if any(ord(c) < 32 for c in value):
            raise ValueError("the model name holds control characters")
        return value

    def recorded(self) -> dict[str, Any]:
        """The settings as recorded in ``config.yaml`` and compared when a run resumes (file
        paths are excluded; their sha256 fields are kept)."""
        return self.model_dump(mode="json")


CiLevel = Annotated[
    float,
    Field(
        default=LEVEL,
        gt=0.5,
        lt=1.0,
        description="Confidence level of every interval (e.g. 0.9, 0.95, 0.99).",
    ),
    FLAG,
]
"""The confidence level of a method's intervals (:data:`~biaslens.metrics.intervals.LEVEL`,
0.95, by default: the default lives here, not in each settings model)."""


SubjectsAre = Annotated[
    Literal["auto", "drawn", "fixed"],
    Field(
        description="What the intervals take the subjects to be: drawn (a sample of subjects, "
        "as first names are: the spread between subjects counts) or fixed (the population "
        "asked about, as these religions are: only the templates are draws); auto: a "
        "domain's names drawn, its categories fixed."
    ),
    FLAG,
]
"""The setting: whether a set's subjects are draws or the population asked about
(:class:`~biaslens.metrics.intervals.crossed.Design`); ``auto`` decides by the domain, into
the :data:`~biaslens.metrics.intervals.SubjectKind` a run's intervals take."""


def _enough_replicates(value: int) -> int:
    if 0 < value < MIN_REPLICATES:
        raise ValueError(
            f"too few replicates for an interval: use at least {MIN_REPLICATES} (0: no interval)"
        )
    return value


Replicates = Annotated[
    int,
    Field(
        ge=0,
        le=100_000,
        description="Bootstrap replicates for the intervals (0: none; otherwise at least 200), "
        "seeded by --seed; where the intervals are a jackknife over a crossed design "
        "(unqover and lei-eval: subjects × templates; cid-ratings: both groups' names) the "
        "value only turns them on or off.",
    ),
    AfterValidator(_enough_replicates),
    FLAG,
]
"""Bootstrap replicates (0: no intervals; otherwise at least 200). Methods whose intervals are
computed over a crossed design rather than resampled read it as intervals on or off."""


class SettingError(BiaslensError):
    """A setting with a value its method does not take; ``field`` names it (``w_kinds.0``),
    so that the command line can name the flag instead."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"invalid {field}: {detail}")
        self.field, self.detail = field, detail


def describe_error(error: ValidationError) -> SettingError:
    first = error.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "settings"
    value = first.get("input")
    shown = repr(value) if not isinstance(value, dict) else "{…}"
    if len(shown) > 80:
        shown = shown[:77] + "…"
    return SettingError(field, f"{first['msg']} (got {shown})")


def validated(model: type[M], values: dict) -> M:
    """Build ``model(**values)``, turning the first validation error into a ``SettingError``."""
    try:
        return model(**values)
    except ValidationError as error:
        raise describe_error(error) from None


def file_sha256(path: Path | str | None, what: str) -> str:
    """sha256 of an input file given by the user ('' when none); missing file = clear error."""
    if path is None:
        return ""

    path = Path(path)
    if not path.is_file():
        raise BiaslensError(
            f"{what} {path}: " + ("is a folder, not a file" if path.is_dir() else "file not found")
        )
    return sha256_file(path)


# ---------------------------------------------------------------- settings several methods share
MODEL_HELP = (
    "Registered name (see `biaslens models list`: default, and offline with the gemma extra "
    "gemma-3-270m), hub name or local model folder; with --backend openai, the name the "
    "server serves."
)
ModelName = Annotated[str, Field(description=MODEL_HELP), Flag("--model", "-m")]
RandomSeed = Annotated[Seed, Field(description="Random seed (>= 0)."), FLAG]
MinPronounMass = Annotated[
    float,
    Field(
        ge=0,
        le=1,
        description="Exact scoring: refuse when the pronouns hold less than this mean share of "
        "the probability at the slot (0 to 1; 0 goes on anyway, recorded in the run's "
        "settings).",
    ),
    FLAG,
]
"""The ``min_pronoun_mass`` setting of SIB's methods (:func:`check_pronoun_mass`)."""
PronounScoring = Annotated[
    Literal["exact", "paper", "sampled"],
    Field(
        description="exact: full-vocabulary pronoun probability; paper: top-5 sums, greedy "
        "decoding for causal models (App. G); sampled: the share of --samples replies drawn at "
        "temperature 1 that begin with each pronoun (chosen with a note where the model gives "
        "no probabilities)."
    ),
    Flag("--scoring", "--mode", deprecated={"--mode": "--scoring"}),
]
QA_MODE_FLAG = Flag("--qa-mode", "--mode", deprecated={"--mode": "--qa-mode"})
"""How the QA methods' scoring mode is spelled (``mode``, ``--qa-mode``)."""
SpanAdjustment = Annotated[
    Literal["none", "articles", "reference"],
    Field(
        description="Extractive S: none, articles (a preceding article, a following person "
        "noun) or reference (UnQover's full lists)."
    ),
    FLAG,
]
QaOrder = Annotated[
    Literal["question-first", "context-first"],
    Field(
        description="Extractive input: question-first (UnQover) or context-first (LEI fine-tuning)."
    ),
    FLAG,
]
QaFile = Annotated[
    Path | None,
    Field(
        exclude=True,
        description="SQuAD-format file: EM/F1 (and, for lei-train, QA rows mixed into training).",
    ),
    FLAG,
]
QaLimit = Annotated[Limit, Field(description="First N questions of --qa-file (0: all).")]
