"""The settings of ``lei-train`` (LEI few-shot fine-tuning) and their command-line options."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from biaslens.data import lei
from biaslens.framework import options as O
from biaslens.framework.settings import Limit, MethodSettings, file_sha256, validated
from biaslens.train.config import TrainingOptions

TRAIN_SIZES = (64, 256, 1024, 4096)
TESTS = ("religion/noniid_test", "ethnicity/noniid_test", "gender/noniid_test")


class LeiTrainSettings(MethodSettings, TrainingOptions):
    """Settings that decide a fine-tuning run's results: how it trains (the
    :class:`TrainingOptions` every training of the grid gets) and what it trains, selects and
    evaluates (``qa_file`` is recorded by its sha256; ``keep_checkpoints`` only decides what is
    kept on disk)."""

    model: str = "default"
    mode: Literal["auto", "extractive", "generative"] = "auto"
    train_sizes: tuple[int, ...] = TRAIN_SIZES
    learning_rates: tuple[float, ...] = (5e-6, 1e-5, 2e-5, 3e-5)
    epochs: tuple[int, ...] = (3, 5, 7, 9)
    train_batch_size: int = Field(default=8, ge=1, description="intervention examples per step")
    reference: Literal["model", "file"] = "model"
    dominant_from: Literal["templates", "adversarial"] = Field(
        default="templates",
        description="x_dom: mean C over every template without interventions (Appendix B.2), "
        "or over every template × adversarial intervention, question first and with the span "
        "adjustment (LEI's adding_cbias.py)",
    )
    selection: Literal["gap", "theta4"] = Field(
        default="gap",
        description="gap: Σ over types |μ − desired μ|; theta4: (1 − adversarial θ4) + "
        "ethical θ4 (LEI's model_select.py)",
    )
    qa_order: Literal["question-first", "context-first"] = "question-first"
    span_adjustment: Literal["none", "articles", "reference"] = "none"
    train_types: tuple[str, ...] = lei.INTERVENTION_TYPES
    top_k: int = Field(default=5, ge=1)
    dev: str = "religion/noniid_dev"
    dev_limit: Limit = None
    tests: tuple[str, ...] = TESTS
    test_limit: Limit = None
    qa_sha256: str = ""
    qa_limit: Limit = None
    qa_file: Path | None = Field(default=None, exclude=True)
    keep_checkpoints: bool = Field(default=False, exclude=True)
    parallel_cells: int = Field(default=1, ge=1, exclude=True)
    """Grid groups trained at once as Ray tasks (1: here, one after the other)."""

    @field_validator("learning_rates")
    @classmethod
    def _positive_rates(cls, rates: tuple[float, ...]) -> tuple[float, ...]:
        if not rates or any(not rate > 0 for rate in rates):
            raise ValueError("every learning rate must be > 0")
        return rates

    @field_validator("epochs")
    @classmethod
    def _positive_epochs(cls, epochs: tuple[int, ...]) -> tuple[int, ...]:
        if not epochs or any(e < 1 for e in epochs):
            raise ValueError("every epoch count must be >= 1")
        return epochs

    @field_validator("train_sizes")
    @classmethod
    def _official_sizes(cls, sizes: tuple[int, ...]) -> tuple[int, ...]:
        unknown = [s for s in sizes if s not in TRAIN_SIZES]
        if not sizes or unknown:
            raise ValueError(f"official religion train sizes are {TRAIN_SIZES}")
        return sizes

    @field_validator("train_types")
    @classmethod
    def _known_types(cls, types: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(types) - set(lei.INTERVENTION_TYPES))
        if not types or unknown:
            raise ValueError(f"intervention types are {', '.join(lei.INTERVENTION_TYPES)}")
        return types

    @field_validator("dev", "tests")
    @classmethod
    def _known_splits(cls, value):
        for name in (value,) if isinstance(value, str) else value:
            if name not in lei.SPLITS or "/train_" in name:
                evaluable = [s for s in lei.SPLITS if "/train_" not in s]
                raise ValueError(f"unknown evaluation split {name!r}; use {', '.join(evaluable)}")
        return value


def make_settings(qa_file: Path | None = None, **values) -> LeiTrainSettings:
    if qa_file is not None:
        values["qa_sha256"] = file_sha256(qa_file, "QA file")
        values["qa_file"] = Path(qa_file)
    return validated(LeiTrainSettings, values)


def _weight(kind: str) -> O.Option:
    return O.Option(
        f"weights.{kind}", f"--weight-{kind}", help=f"Loss weight of the {kind} term.",
        type=float, minimum=0,
    )  # fmt: skip


OPTIONS = (
    O.MODEL,
    O.QA_MODE,
    O.Option("train_sizes", help="Official religion train files.", type=int, multiple=True),
    O.Option(
        "learning_rates",
        "--learning-rates",
        "--lrs",
        help="Grid of learning rates.",
        type=float,
        multiple=True,
    ),
    O.Option("epochs", help="Grid of epoch counts.", type=int, multiple=True),
    O.Option("train_batch_size", help="Intervention examples per step.", type=int),
    O.Option(
        "qa_ratio",
        help="QA rows mixed in per intervention example (1/3 = official).",
        type=float,
    ),
    *(_weight(kind) for kind in ("ethical", "adversarial", "irrelevant", "qa")),
    O.Option("schedule", help="linear (decay to 0) or constant (shares runs across epochs)."),
    O.Option(
        "reference",
        help="Zero-shot targets: model (computed with the model before training) or file (the "
        "split's stored RoBERTa probabilities and tomax; extractive only).",
    ),
    O.Option(
        "dominant_from",
        help="The dominant subject x_dom from templates (every template without "
        "interventions: Appendix B.2) or adversarial (every template × adversarial "
        "intervention, question first, span-adjusted: LEI's adding_cbias.py).",
    ),
    O.Option(
        "loss_reduction",
        help="mean (each group loss averaged over its rows) or reference (summed over rows, "
        "total halved, as LEI's code).",
    ),
    O.Option(
        "selection",
        help="Dev criterion: gap (Σ |μ − desired μ|) or theta4 ((1 − adversarial θ4) + "
        "ethical θ4, as LEI's model_select.py).",
    ),
    O.SPAN_ADJUSTMENT,
    O.QA_ORDER,
    O.Option(
        "train_types", help="Intervention types to train on (ablations drop some).", multiple=True
    ),
    O.Option(
        "top_k",
        "--top-checkpoints",
        "--top-k",
        help="Checkpoints kept per train size.",
        type=int,
        deprecated=(("--top-k", "--top-checkpoints"),),
    ),  # fmt: skip
    O.Option("dev", help="Selection split."),
    O.Option("dev_limit", help="About N context pairs of dev (0: all).", type=int),
    O.Option(
        "tests",
        help="Evaluation splits (the gender test adds the specified contexts).",
        multiple=True,
    ),
    O.Option("test_limit", help="About N context pairs per test (0: all).", type=int),
    O.QA_FILE,
    O.QA_LIMIT,
    O.SEED,
    O.Option("keep_checkpoints", help="Keep the checkpoints that were not selected.", type=bool),
    O.Option(
        "parallel_cells",
        help="Train N grid groups at once as Ray tasks, one device each (with --ray-address on "
        "a cluster whose nodes share the run folder).",
        type=int,
        minimum=1,
    ),
)
"""The options of ``biaslens run lei-train``."""
