"""The vLLM backend (``--backend vllm``): a causal model in an in-process vLLM engine
(:mod:`.engine`; ``pip install 'biaslens[vllm]'``, or ``bash scripts/install.sh --vllm`` for
the CPU build)."""

from __future__ import annotations

from biaslens.models.options import CHECKPOINT, IN_PROCESS, PROMPTS, BackendOption
from biaslens.models.registry import RegisteredBackend


def _engine_options(value):
    from biaslens.errors import BiaslensError

    if not isinstance(value, dict):
        raise BiaslensError(f"engine_options takes a dict of vllm.LLM arguments, got {value!r}")
    return dict(value)


ENGINE_OPTIONS = BackendOption(
    "engine_options",
    default={},
    parse=_engine_options,
    cli=False,
    compare=False,
    record="never",
    help="Further arguments of vllm.LLM (Python only), e.g. {'gpu_memory_utilization': 0.5}.",
)

BACKEND = RegisteredBackend(
    "vllm",
    "biaslens.models.backends.vllm.engine:load_vllm",
    "vLLM engine, in process (causal models; pip install 'biaslens[vllm]')",
    summary="vLLM engine, in process",
    options=(*IN_PROCESS, *CHECKPOINT, *PROMPTS, ENGINE_OPTIONS),
    packages=("vllm",),
)
