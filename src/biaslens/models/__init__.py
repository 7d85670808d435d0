"""Model layer: request types, the backend interface, the transformers backend, the registry."""

from biaslens.models.base import LM, ModelIdentity, ModelKind
from biaslens.models.hf import BackendConfig, HFBackend, load_hf
from biaslens.models.registry import REGISTRY, load_model
from biaslens.models.requests import (
    MASK,
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    ContrastiveGenerateRequest,
    ContrastiveGenerateResult,
    GenerateRequest,
    GenerateResult,
    SpanScoresRequest,
    SpanScoresResult,
    TokenDistributionRequest,
    TokenDistributionResult,
)

__all__ = [
    "LM",
    "MASK",
    "REGISTRY",
    "BackendConfig",
    "ChoiceLogprobsRequest",
    "ChoiceLogprobsResult",
    "ContrastiveGenerateRequest",
    "ContrastiveGenerateResult",
    "GenerateRequest",
    "GenerateResult",
    "HFBackend",
    "ModelIdentity",
    "ModelKind",
    "SpanScoresRequest",
    "SpanScoresResult",
    "TokenDistributionRequest",
    "TokenDistributionResult",
    "load_hf",
    "load_model",
]
