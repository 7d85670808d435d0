"""What fine-tuning needs of a model: :class:`TrainableLM`.

LEI fine-tuning (:mod:`biaslens.methods.qa.train`, ``lei-train``) works with any backend that
provides these hooks; the transformers backend does. Code checks ``isinstance(lm, TrainableLM)``
instead of asking for one backend class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from biaslens.errors import BiaslensError
from biaslens.models.base import ModelIdentity, ModelKind
from biaslens.models.config import BackendConfig


@runtime_checkable
class TrainableLM(Protocol):
    """A model whose weights can be fine-tuned in process, with the differentiable passes
    scoring uses (so a trained model is scored exactly as it was trained)."""

    model: Any
    tokenizer: Any
    identity: ModelIdentity
    config: BackendConfig
    kind: ModelKind
    device: Any

    def trainable_copy(self) -> TrainableLM:
        """A float32 copy to train, leaving this model as it is."""
        ...

    def save_pretrained(self, folder: Path) -> None:
        """Write the weights and tokenizer so that :meth:`load_checkpoint` reads them back."""
        ...

    def load_checkpoint(self, folder: Path, name: str) -> TrainableLM:
        """A saved checkpoint, loaded with this model's backend settings."""
        ...

    def encode_choice_requests(self, requests): ...

    def encode_spans(self, question: str, context: str, spans, context_first: bool = False): ...

    def continuation_logprobs(self, prompts: list[list[int]], continuations: list[list[int]]): ...

    def start_end_logprobs(self, sequences: list[list[int]]): ...


def require_trainable(lm, what: str = "fine-tuning") -> TrainableLM:
    """``lm`` if it can be fine-tuned in process, else a one-line error saying what would."""
    if not isinstance(lm, TrainableLM):
        raise BiaslensError(
            f"model {lm.identity.name!r} is on the {lm.identity.backend} backend; {what} needs "
            "the transformers backend (--backend hf)"
        )
    return lm
