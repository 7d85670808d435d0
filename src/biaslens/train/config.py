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


class LeiTrainConfig(BaseModel):
    """One training run (one grid cell)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    learning_rate: float = Field(gt=0)
    epochs: int = Field(ge=1)
    batch_size: int = Field(default=8, ge=1, description="intervention examples per step")
    qa_ratio: float = Field(default=1 / 3, ge=0)
    weights: LossWeights = LossWeights()
    schedule: Literal["linear", "constant"] = "linear"
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)
    max_grad_norm: float = Field(default=1.0, gt=0)
    loss_reduction: Literal["mean", "reference"] = "mean"
    """``mean``: each group loss averaged over its rows; ``reference``: summed over rows and
    halved, as LEI's ``mutils.py`` (the QA cross-entropy stays the mean of start and end)."""
    context_first: bool = False
    """Extractive input order: (context, question) as LEI's fine-tuning, else (question,
    context)."""
    seed: Seed = 0
