"""The vLLM backend (``--backend vllm``): a causal model in an in-process vLLM engine
(:mod:`.engine`; ``pip install 'biaslens[vllm]'``, or ``bash scripts/install.sh --vllm`` for
the CPU build)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from biaslens.errors import BiaslensError
from biaslens.models.options import BackendOptions, Checkpoint, InProcess, OptionRules, Prompts
from biaslens.models.registry import RegisteredBackend


def _engine_options(value):
    if not isinstance(value, dict):
        raise BiaslensError(f"engine_options takes a dict of vllm.LLM arguments, got {value!r}")
    return dict(value)


class VLLMOptions(Prompts, Checkpoint, InProcess, BackendOptions):
    """The vllm backend's options: in process, a checkpoint, causal prompts, the engine's."""

    engine_options: Annotated[
        dict[str, Any],
        OptionRules(parse=_engine_options, cli=False, compare=False, record="never"),
    ] = Field(
        default_factory=dict,
        description="Further arguments of vllm.LLM (Python only), e.g. "
        "{'gpu_memory_utilization': 0.5}.",
    )


BACKEND = RegisteredBackend(
    "vllm",
    "biaslens.models.backends.vllm.engine:load_vllm",
    "vLLM engine, in process (causal models; pip install 'biaslens[vllm]')",
    summary="vLLM engine, in process",
    options=VLLMOptions,
    packages=("vllm",),
)
