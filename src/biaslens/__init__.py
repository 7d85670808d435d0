"""biaslens: audit language models for social bias by intervening on their inputs.

Data flow: dataset builder -> requests -> model backend -> metrics -> run store -> report.

The public API (loaded lazily, PEP 562: ``import biaslens`` imports no torch)::

    biaslens.run(method, model=..., **settings) -> RunResult
    biaslens.audit(model, size="quick") -> AuditResult (each model's bias card)
    biaslens.load_run(path) -> RunResult
    biaslens.load_runs(*folders_or_globs) -> pandas.DataFrame (one row per run × value)
    biaslens.load_model(name, backend="hf", **options) -> LM
    biaslens.contrastive_generate(model, tokenizer, x, x_prime, lam)
    biaslens.methods(), biaslens.settings(method)
    request types: TokenDistributionRequest, SpanScoresRequest, AnswerSpanRequest,
    ChoiceLogprobsRequest, GenerateRequest, ContrastiveGenerateRequest (and their results)
"""

from __future__ import annotations

import importlib

from biaslens.errors import BiaslensError
from biaslens.version import __version__

_EXPORTS = {
    "run": "biaslens.api",
    "audit": "biaslens.api",
    "load_run": "biaslens.api",
    "load_runs": "biaslens.api",
    "load_model": "biaslens.api",
    "methods": "biaslens.api",
    "settings": "biaslens.api",
    "RunResult": "biaslens.store.result",
    "BackendConfig": "biaslens.models.config",
    "LM": "biaslens.models.base",
    "ModelKind": "biaslens.models.base",
    "contrastive_generate": "biaslens.decoding.contrastive",
    "RequestType": "biaslens.models.requests",
    "TokenDistributionRequest": "biaslens.models.requests",
    "TokenDistributionResult": "biaslens.models.requests",
    "SpanScoresRequest": "biaslens.models.requests",
    "SpanScoresResult": "biaslens.models.requests",
    "AnswerSpanRequest": "biaslens.models.requests",
    "AnswerSpanResult": "biaslens.models.requests",
    "ChoiceLogprobsRequest": "biaslens.models.requests",
    "ChoiceLogprobsResult": "biaslens.models.requests",
    "GenerateRequest": "biaslens.models.requests",
    "GenerateResult": "biaslens.models.requests",
    "ContrastiveGenerateRequest": "biaslens.models.requests",
    "ContrastiveGenerateResult": "biaslens.models.requests",
}
__all__ = ["BiaslensError", "__version__", *sorted(_EXPORTS)]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'biaslens' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
