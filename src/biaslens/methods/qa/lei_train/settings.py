"""The settings of ``lei-train`` (LEI few-shot fine-tuning), each with its command-line flag."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator

from biaslens.common.options import FLAG, Flag
from biaslens.framework.settings import (
    QA_MODE_FLAG,
    Limit,
    MethodSettings,
    ModelName,
    QaFile,
    QaLimit,
    QaOrder,
    SpanAdjustment,
    file_sha256,
    validated,
)
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.train.config import TrainingOptions

TRAIN_SIZES = (64, 256, 1024, 4096)
TESTS = ("religion/noniid_test", "ethnicity/noniid_test", "gender/noniid_test")


class LeiTrainSettings(MethodSettings, TrainingOptions):
    """Settings that decide a fine-tuning run's results: how it trains (the
    :class:`TrainingOptions` every training of the grid gets) and what it trains, selects and
    evaluates (``qa_file`` is recorded by its sha256; ``keep_checkpoints`` only decides what is
    kept on disk)."""

    model: ModelName = "default"
    mode: Annotated[Literal["auto", "extractive", "generative"], QA_MODE_FLAG] = Field(
        default="auto", description="auto (from the model kind), extractive or generative."
    )
    train_sizes: Annotated[tuple[int, ...], FLAG] = Field(
        default=TRAIN_SIZES, description="Official religion train files."
    )
    learning_rates: Annotated[tuple[float, ...], Flag("--learning-rates", "--lrs")] = Field(
        default=(5e-6, 1e-5, 2e-5, 3e-5), description="Grid of learning rates."
    )
    epochs: Annotated[tuple[int, ...], FLAG] = Field(
        default=(3, 5, 7, 9), description="Grid of epoch counts."
    )
    train_batch_size: Annotated[int, FLAG] = Field(
        default=8, ge=1, description="Intervention examples per step."
    )
    reference: Annotated[Literal["model", "file"], FLAG] = Field(
        default="model",
        description="Zero-shot targets: model (computed with the model before training) or file "
        "(the split's stored RoBERTa probabilities and tomax; extractive only).",
    )
    dominant_from: Annotated[Literal["templates", "adversarial"], FLAG] = Field(
        default="templates",
        description="The dominant subject x_dom from templates (every template without "
        "interventions: Appendix B.2) or adversarial (every template × adversarial "
        "intervention, question first, span-adjusted: LEI's adding_cbias.py).",
    )
    selection: Annotated[Literal["gap", "theta4"], FLAG] = Field(
        default="gap",
        description="Dev criterion: gap (Σ |μ − desired μ|) or theta4 ((1 − adversarial θ4) + "
        "ethical θ4, as LEI's model_select.py).",
    )
    qa_order: QaOrder = "question-first"
    span_adjustment: SpanAdjustment = "none"
    train_types: Annotated[tuple[str, ...], FLAG] = Field(
        default=lei.INTERVENTION_TYPES,
        description="Intervention types to train on (ablations drop some).",
    )
    top_k: Annotated[
        int, Flag("--top-checkpoints", "--top-k", deprecated={"--top-k": "--top-checkpoints"})
    ] = Field(default=5, ge=1, description="Checkpoints kept per train size.")
    dev: Annotated[str, FLAG] = Field(default="religion/noniid_dev", description="Selection split.")
    dev_limit: Limit = Field(default=None, description="About N context pairs of dev (0: all).")
    tests: Annotated[tuple[str, ...], FLAG] = Field(
        default=TESTS,
        description="Evaluation splits (the gender test adds the specified contexts).",
    )
    test_limit: Limit = Field(default=None, description="About N context pairs per test (0: all).")
    qa_sha256: str = ""
    qa_limit: QaLimit = None
    qa_file: QaFile = None
    keep_checkpoints: Annotated[bool, FLAG] = Field(
        default=False, exclude=True, description="Keep the checkpoints that were not selected."
    )
    parallel_cells: Annotated[int, FLAG] = Field(
        default=1,
        ge=1,
        exclude=True,
        description="Train N grid groups at once as Ray tasks, one device each (with "
        "--ray-address on a cluster whose nodes share the run folder).",
    )

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
