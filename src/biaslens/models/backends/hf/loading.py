"""Loading a transformers model: device, dtype, model kind, identity, and clear errors.

One place decides device and dtype. A folder that is not a loadable model (no config, damaged or
random weights, no tokenizer files) is a one-line :class:`BiaslensError` naming the folder.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from biaslens.errors import BiaslensError
from biaslens.models.backends.hf.attention import use_cpu_gqa
from biaslens.models.backends.hf.checkpoint import check_finite_weights, check_loaded_tensors
from biaslens.models.backends.hf.cpu_memory import keep_freed_memory
from biaslens.models.base import ModelIdentity, ModelKind
from biaslens.models.checkpoints.local import (
    load_or_refuse,
    load_tokenizer,
    locate_model,
    model_fingerprint,
    model_source,
    weights_sha256,
)
from biaslens.models.config import BackendConfig
from biaslens.models.runtime.tokenization import chat_identity, check_chat

if TYPE_CHECKING:
    from biaslens.models.checkpoints.reference import CheckpointRef
    from biaslens.models.config import BackendConfig

DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def resolve_device(device: str) -> torch.device:
    """``auto`` picks cuda, then mps, then cpu."""
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise BiaslensError(
            f"unknown device {device!r} (use auto, cpu, cuda, cuda:N or mps)"
        ) from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise BiaslensError(f"device {device!r} requested but CUDA is not available")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise BiaslensError(f"device {device!r} requested but MPS is not available")
    return resolved


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` is bfloat16 on a GPU that supports it, float32 otherwise."""
    if dtype == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if dtype not in DTYPES:
        raise BiaslensError(f"unknown dtype {dtype!r} (use auto, {', '.join(DTYPES)})")
    resolved = DTYPES[dtype]
    if device.type == "cpu" and resolved != torch.float32 and not cpu_has_bf16_units():
        warnings.warn(
            f"dtype {dtype} on a CPU without bf16/fp16 matrix units (no AVX512-BF16/AMX) is much "
            "slower than float32",
            stacklevel=2,
        )
    return resolved


BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""``/proc/cpuinfo`` flags of CPUs with bf16 matrix units (AVX-512 BF16, AMX)."""


MATRIX_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
"""The ``/proc/cpuinfo`` flags that decide dense matmul speed, as benchmarks report them."""


def cpu_flags(cpuinfo: str | None = None) -> set[str] | None:
    """The CPU's flags from the first ``flags`` line of ``/proc/cpuinfo`` (``cpuinfo``: that
    file's text, for tests); None where they cannot be read (macOS, Windows)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[-1].split())
    return None


def cpu_matrix_flags(cpuinfo: str | None = None) -> list[str]:
    """Which of :data:`MATRIX_FLAGS` the CPU has (benchmarks print them beside the peak)."""
    flags = cpu_flags(cpuinfo) or set()
    return [flag for flag in MATRIX_FLAGS if flag in flags]


def cpu_has_bf16_units(cpuinfo: str | None = None) -> bool:
    """Whether the CPU has bf16 matrix units (AVX-512 BF16 or AMX). On an AVX2-only CPU a bare
    bf16 matmul measured ~100× slower than fp32 and SmolLM2's exact MGC scoring ~8× slower
    (``benchmarks/bench_mgc.py --bf16 on``); with the units bf16 is faster. True
    where it cannot be told (no ``/proc/cpuinfo``), so that nothing is claimed there."""
    flags = cpu_flags(cpuinfo)
    return True if flags is None else any(flag in flags for flag in BF16_FLAGS)


def load_parts(checkpoint: CheckpointRef, config: BackendConfig | None = None):
    """Model, tokenizer, identity and backend settings of the model at ``checkpoint`` (a hub
    snapshot, from the local cache only when offline, or a local folder;
    :func:`~.backend.load_hf` wraps them)."""
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForQuestionAnswering,
        AutoModelForSeq2SeqLM,
    )
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    config = config or BackendConfig()
    options = config.options
    folder, model_config, kind = locate_model(checkpoint, options.offline, options.model_kind)
    device = resolve_device(options.device)
    dtype = resolve_dtype(options.dtype, device)
    encoder_decoder = bool(getattr(model_config, "is_encoder_decoder", False))
    auto_class = {
        ModelKind.MASKED: AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForMaskedLM,
        ModelKind.CAUSAL: AutoModelForCausalLM,
        ModelKind.SEQ2SEQ: AutoModelForSeq2SeqLM,
        ModelKind.EXTRACTIVE_QA: AutoModelForQuestionAnswering,
    }[kind]
    if options.allow_missing_weights:
        torch.manual_seed(0)  # missing tensors get the same values on every load
    model, loading_info = load_or_refuse(
        "model weights",
        folder,
        lambda: auto_class.from_pretrained(
            folder, dtype=dtype, output_loading_info=True, trust_remote_code=False
        ),
    )
    unused = check_loaded_tensors(folder, model, model_config, loading_info, config)
    check_finite_weights(folder, model)
    tokenizer = load_tokenizer(folder)
    check_chat(tokenizer, kind, options, checkpoint.name)
    model.to(device).eval()
    use_cpu_gqa(model)
    if device.type == "cpu":
        keep_freed_memory()  # activations reused from batch to batch, not faulted back in
    identity = ModelIdentity(
        name=checkpoint.name,
        kind=kind,
        fingerprint=model_fingerprint(folder),
        num_parameters=sum(p.numel() for p in model.parameters()),
        backend="hf",
        numerics=(
            ("dtype", str(dtype).removeprefix("torch.")),
            ("device_type", device.type),
            ("add_bos", str(options.add_bos)),
            *((("input_prefix", options.input_prefix),) if options.input_prefix else ()),
            *chat_identity(options),
            *((("random_tensors", "seeded"),) if unused.get("random_tensors") else ()),
        ),
        weights_sha256=weights_sha256(folder),
        details=(*unused.items(), *tokenizer_details(tokenizer)),
        source=model_source(folder, checkpoint),
    )
    return model, tokenizer, identity, config


def tokenizer_details(tokenizer) -> tuple[tuple[str, str], ...]:
    """The tokenizer's model (WordPiece, BPE…) and whether it lower-cases: the reference's
    span adjustment compares words as such a tokenizer writes them."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return ()
    lowercases = tokenizer.tokenize("A") == tokenizer.tokenize("a")
    return (("tokenizer_model", type(backend.model).__name__), ("lowercases", str(lowercases)))
