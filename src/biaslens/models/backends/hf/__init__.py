"""The transformers backend (``--backend hf``, the default): masked, causal, seq2seq and
extractive-QA models in process. :func:`load_hf` loads one; :class:`HFBackend` answers
requests with it (both imported when first used: declaring the backend imports no torch)."""

from __future__ import annotations

import importlib
from typing import Annotated

from pydantic import Field

from biaslens.models.kinds import KIND_NAMES
from biaslens.models.options import (
    BackendOptions,
    Checkpoint,
    InProcess,
    OptionRules,
    Prompts,
    one_of,
)
from biaslens.models.registry import RegisteredBackend

SERVED = "a served model's kind, input format and weights are the server's"


class HFOptions(Prompts, Checkpoint, InProcess, BackendOptions):
    """The hf backend's options: in process, a checkpoint, causal prompts, and its own."""

    model_kind: Annotated[
        str,
        OptionRules(
            parse=one_of("--model-kind", ("auto", *KIND_NAMES), "model kind"), elsewhere=SERVED
        ),
    ] = Field(
        "auto",
        description="auto (from the config; BART loads as fill-mask), masked (e.g. a T5/UL2 "
        "span denoiser), causal, seq2seq (e.g. a fine-tuned BART) or extractive-qa.",
    )
    input_prefix: Annotated[str, OptionRules(elsewhere=SERVED)] = Field(
        "", description="Text put before every input, e.g. '[NLU] ' for UL2's denoiser mode."
    )
    allow_missing_weights: Annotated[bool, OptionRules(elsewhere=SERVED, record="set")] = Field(
        False,
        description="Run a checkpoint that lacks tensors its model needs (they get seeded "
        "random values). For tests only: the run's summary and report say so.",
    )


BACKEND = RegisteredBackend(
    "hf",
    "biaslens.models.backends.hf:load_hf",
    "transformers, in process (every model kind)",
    summary="transformers, in process",
    options=HFOptions,
    packages=("torch", "transformers", "tokenizers"),
)

_LAZY = {
    "HFBackend": "biaslens.models.backends.hf.backend",
    "load_hf": "biaslens.models.backends.hf.backend",
}
__all__ = ["BACKEND", "HFBackend", "HFOptions", "load_hf"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
