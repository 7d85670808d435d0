"""Model layer: request types, the backend interface, the backends and the model registry.

The front door for backend authors: a backend of one's own imports what it needs from here
(``docs/development.md``, "Adding a backend").

Imports are lazy (PEP 562): ``from biaslens.models import LM`` does not import torch; only
touching a backend (``HFBackend``, ``load_model`` of a model) does.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "LM": "biaslens.models.base",
    "BackendConfig": "biaslens.models.config",
    "BackendOptions": "biaslens.models.options",
    "OptionRules": "biaslens.models.options",
    "RegisteredBackend": "biaslens.models.registry",
    "Exactness": "biaslens.models.base",
    "ModelIdentity": "biaslens.models.base",
    "ModelKind": "biaslens.models.base",
    "HFBackend": "biaslens.models.backends.hf",
    "load_hf": "biaslens.models.backends.hf",
    "MODELS": "biaslens.models.checkpoints.registered",
    "load_model": "biaslens.models.loader",
    "MASK": "biaslens.models.requests",
    "RequestType": "biaslens.models.requests",
    "AnswerSpanRequest": "biaslens.models.requests",
    "AnswerSpanResult": "biaslens.models.requests",
    "ChoiceLogprobsRequest": "biaslens.models.requests",
    "ChoiceLogprobsResult": "biaslens.models.requests",
    "ContrastiveGenerateRequest": "biaslens.models.requests",
    "ContrastiveGenerateResult": "biaslens.models.requests",
    "GenerateRequest": "biaslens.models.requests",
    "GenerateResult": "biaslens.models.requests",
    "SampleRequest": "biaslens.models.requests",
    "SampleResult": "biaslens.models.requests",
    "SpanScoresRequest": "biaslens.models.requests",
    "SpanScoresResult": "biaslens.models.requests",
    "TokenDistributionRequest": "biaslens.models.requests",
    "TokenDistributionResult": "biaslens.models.requests",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'biaslens.models' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
