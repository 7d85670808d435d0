"""Everything a method author imports, in one place (the front door of :mod:`biaslens.framework`).

A method is a settings model, a body and one :func:`register` call::

    from biaslens.method import (
        Headline, Limit, MethodOutput, MethodSettings, MethodSpec, ModelName, OutputFile,
        RunContext, TokenDistributionRequest, register,
    )

The names here are the stable surface for plug-ins (``docs/development.md``, "Adding a
method"); the modules they come from are biaslens's own layout and may move.
"""

from __future__ import annotations

from biaslens.common.options import FLAG, Argument, Flag, Option
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import (
    Amended,
    Amendment,
    AuditRole,
    AuditStep,
    CommandContext,
    LmEvalTask,
    MethodCommand,
)
from biaslens.framework.presets import UNSET, ByModel
from biaslens.framework.questions import Question
from biaslens.framework.registry import register
from biaslens.framework.settings import (
    CiLevel,
    Limit,
    MethodSettings,
    ModelName,
    RandomSeed,
    Replicates,
    SettingError,
)
from biaslens.framework.spec import Comparison, Headline, MethodOutput, MethodSpec, RunContext
from biaslens.metrics.meanings import Measure
from biaslens.models.base import LM, ModelKind
from biaslens.models.requests import (
    AnswerSpanRequest,
    AnswerSpanResult,
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    ContrastiveGenerateRequest,
    ContrastiveGenerateResult,
    GenerateRequest,
    GenerateResult,
    RequestType,
    SampleRequest,
    SampleResult,
    SpanScoresRequest,
    SpanScoresResult,
    TokenDistributionRequest,
    TokenDistributionResult,
)
from biaslens.store.output_files import OutputFile

__all__ = [
    "FLAG",
    "LM",
    "UNSET",
    "Amended",
    "Amendment",
    "AnswerSpanRequest",
    "AnswerSpanResult",
    "Argument",
    "AuditRole",
    "AuditStep",
    "BiaslensError",
    "ByModel",
    "ChoiceLogprobsRequest",
    "ChoiceLogprobsResult",
    "CiLevel",
    "CommandContext",
    "Comparison",
    "ContrastiveGenerateRequest",
    "ContrastiveGenerateResult",
    "Flag",
    "GenerateRequest",
    "GenerateResult",
    "Headline",
    "Limit",
    "LmEvalTask",
    "Measure",
    "MethodCommand",
    "MethodOutput",
    "MethodSettings",
    "MethodSpec",
    "ModelKind",
    "ModelName",
    "Option",
    "OutputFile",
    "Question",
    "RandomSeed",
    "Replicates",
    "RequestType",
    "RunContext",
    "SampleRequest",
    "SampleResult",
    "SettingError",
    "SpanScoresRequest",
    "SpanScoresResult",
    "TokenDistributionRequest",
    "TokenDistributionResult",
    "register",
]
