"""Configuration of one LEI fine-tuning run (kept apart from the trainer, which imports torch)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from biaslens.common.seeds import Seed


class LossWeights(BaseModel):
    """Per-type loss weights (the paper sums all terms with weight 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    ethical: float = Field(default=1.0, ge=0)
    adversarial: float = Field(default=1.0, ge=0)
    irrelevant: float = Field(default=1.0, ge=0)
    qa: float = Field(default=1.0, ge=0)


class TrainingOptions(BaseModel):
    """How LEI fine-tunes, declared once: a ``lei-train`` run's settings take these as they are
    and hand them to every training of its grid (:meth:`training_options`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    qa_ratio: float = Field(default=1 / 3, ge=0)
    weights: LossWeights = LossWeights()
    schedule: Literal["linear", "constant"] = "linear"
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)
    loss_reduction: Literal["mean", "reference"] = Field(
        default="mean",
        description="mean: each group loss averaged over its rows; reference: summed over rows "
        "and the total halved (LEI's mutils.py; the QA cross-entropy stays the mean of start "
        "and end)",
    )
    seed: Seed = 0

    def training_options(self) -> dict:
        """These options' values (of a run's settings, for one training's config)."""
        return {name: getattr(self, name) for name in TrainingOptions.model_fields}


class LeiTrainConfig(TrainingOptions):
    """One training run (one grid cell)."""

    learning_rate: float = Field(gt=0)
    epochs: int = Field(ge=1)
    batch_size: int = Field(default=8, ge=1, description="intervention examples per step")
    max_grad_norm: float = Field(default=1.0, gt=0)
    context_first: bool = False
    """Extractive input order: (context, question) as LEI's fine-tuning, else (question,
    context)."""
