"""Configuration of one LEI fine-tuning run (kept apart from the trainer, which imports torch)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from biaslens.common.options import FLAG, Flag
from biaslens.common.seeds import Seed


def _weight(kind: str) -> Any:
    return Annotated[
        float, Field(ge=0, description=f"Loss weight of the {kind} term."), Flag(f"--weight-{kind}")
    ]


class LossWeights(BaseModel):
    """Per-type loss weights (the paper sums all terms with weight 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    ethical: _weight("ethical") = 1.0
    adversarial: _weight("adversarial") = 1.0
    irrelevant: _weight("irrelevant") = 1.0
    qa: _weight("qa") = 1.0


class TrainingOptions(BaseModel):
    """How LEI fine-tunes, declared once: a ``lei-train`` run's settings take these as they are
    and hand them to every training of its grid (:meth:`training_options`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    qa_ratio: Annotated[float, FLAG] = Field(
        default=1 / 3,
        ge=0,
        description="QA rows mixed in per intervention example (1/3 = official).",
    )
    weights: Annotated[LossWeights, Flag(nested="keys")] = LossWeights()
    schedule: Annotated[Literal["linear", "constant"], FLAG] = Field(
        default="linear",
        description="linear (decay to 0) or constant (shares runs across epochs).",
    )
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)
    loss_reduction: Annotated[Literal["mean", "reference"], FLAG] = Field(
        default="mean",
        description="mean (each group loss averaged over its rows) or reference (summed over "
        "rows, total halved, as LEI's code; the QA cross-entropy stays the mean of start and "
        "end).",
    )
    seed: Annotated[Seed, Field(description="Random seed (>= 0)."), FLAG] = 0

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
