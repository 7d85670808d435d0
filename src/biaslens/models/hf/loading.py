"""Loading a transformers model: device, dtype, model kind, identity, and clear errors.

One place decides device and dtype. A folder that is not a loadable model (no config, damaged or
random weights, no tokenizer files) is a one-line :class:`BiaslensError` naming the folder.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import torch

from biaslens.common.hashing import sha256_files
from biaslens.errors import BiaslensError, quoted
from biaslens.models.base import KIND_NAMES, BackendConfig, ModelIdentity, ModelKind
from biaslens.models.hf.attention import use_cpu_gqa
from biaslens.models.hf.checkpoint import check_finite_weights, check_loaded_tensors
from biaslens.models.tokenization import chat_identity, check_chat

DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth"}
DEFINING_FILES = {
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
    "chat_template.jinja",
    "chat_template.json",
}
"""Files besides the weights that change a model's answers (config, generation and tokenizer)."""
TOKENIZER_FILES = DEFINING_FILES - {"config.json", "generation_config.json"}
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


DENOISING_MODEL_TYPES = {"bart", "mbart"}
"""Encoder-decoder models pretrained to reconstruct a corrupted input: as pretrained they are
fill-mask models (the Hugging Face fill-mask pipeline's use, and the SIB paper's for BART)."""


def detect_kind(config, requested: str = "auto") -> ModelKind:
    """The model kind: ``requested`` (a ``--model-kind`` name) or, for ``auto``, inferred from
    the config's model type and ``architectures`` (set by ``save_pretrained``)."""
    if requested != "auto":
        kind = KIND_NAMES[requested]
        encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
        if (kind == ModelKind.CAUSAL and encoder_decoder) or (
            kind == ModelKind.SEQ2SEQ and not encoder_decoder
        ):
            family = "an encoder-decoder" if encoder_decoder else "a decoder- or encoder-only"
            raise BiaslensError(f"--model-kind {requested}: this is {family} model")
        return kind
    if getattr(config, "model_type", None) in DENOISING_MODEL_TYPES:
        return ModelKind.MASKED
    architectures = list(getattr(config, "architectures", None) or [])
    for arch in architectures:
        if arch.endswith("ForMaskedLM"):
            return ModelKind.MASKED
        if arch.endswith("ForQuestionAnswering"):
            return ModelKind.EXTRACTIVE_QA
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return ModelKind.CAUSAL
        if arch.endswith("ForConditionalGeneration") and getattr(
            config, "is_encoder_decoder", False
        ):
            return ModelKind.SEQ2SEQ
    raise BiaslensError(
        f"cannot tell the model kind from architectures={architectures}; "
        "biaslens supports *ForMaskedLM, *ForCausalLM, *ForConditionalGeneration (encoder-decoder) "
        "and *ForQuestionAnswering models"
    )


def weight_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file())


def weights_sha256(folder: Path) -> str:
    """sha256 over the weight files of a model folder (names and digests, sorted)."""
    return sha256_files(weight_files(Path(folder)), Path(folder))


def model_fingerprint(folder: Path) -> str:
    """sha256 over every file that defines the model's answers: weights, config, generation
    config and tokenizer files."""
    folder = Path(folder)
    files = weight_files(folder) + [
        p for p in folder.iterdir() if p.name in DEFINING_FILES and p.is_file()
    ]
    return sha256_files(files, folder)


def local_folder(name_or_path: str, revision: str | None = None, offline: bool = False) -> Path:
    """The folder of a model given by local path or hub name (``NAME@REVISION`` too): a local
    folder as it is, a hub name downloaded when online (:func:`biaslens.models.hub.fetch`) or
    taken from the complete cached snapshot when offline. Every failure is one line."""
    from biaslens.models import hub

    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if revision is not None:
            raise BiaslensError(
                f"model {quoted(name_or_path)} is a local folder: --revision applies to hub names"
            )
        return path
    if path.exists():
        raise BiaslensError(f"model {name_or_path}: a file, not a model folder")
    return hub.fetch(name_or_path, revision, offline=offline)


def _load(what: str, folder: Path, load):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load()
    except (OSError, ValueError, RuntimeError, KeyError, TypeError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BiaslensError(f"{folder}: cannot load the {what} ({message[:300]})") from None
    except Exception as error:  # safetensors raises its own error type for damaged files
        if type(error).__name__ in ("SafetensorError", "HeaderTooLarge", "DeserializeError"):
            raise BiaslensError(
                f"{folder}: the weight files are damaged or not model weights "
                f"({type(error).__name__}: {str(error)[:200]})"
            ) from None
        raise


def load_tokenizer(folder: Path):
    """The tokenizer saved in ``folder``; a damaged or missing one is a one-line error."""
    from transformers import AutoTokenizer

    return _load("tokenizer", Path(folder), lambda: AutoTokenizer.from_pretrained(folder))


def locate_model(name_or_path: str, config: BackendConfig | None = None):
    """The model's folder, config and kind, checked without loading its weights: a folder that
    cannot be a loadable model is a one-line error here (``biaslens`` checks every model of a
    multi-model run this way before the first one runs)."""
    from transformers import AutoConfig

    config = config or BackendConfig()
    try:
        folder = local_folder(name_or_path, config.revision, config.offline)
    except OSError as error:  # e.g. a name longer than the file system allows
        raise BiaslensError(
            f"model {name_or_path[:80]!r}{'…' if len(name_or_path) > 80 else ''}: "
            f"{error.strerror or error}"
        ) from None
    if not (folder / "config.json").is_file():
        raise BiaslensError(f"{folder}: no config.json; not a transformers model folder")
    model_config = _load("model config", folder, lambda: AutoConfig.from_pretrained(folder))
    kind = detect_kind(model_config, config.model_kind)
    if not weight_files(folder):
        raise BiaslensError(f"{folder}: no weight files (*.safetensors or *.bin)")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise BiaslensError(
            f"{folder}: no tokenizer files (tokenizer.json, vocab, merges or sentencepiece "
            "model); save the tokenizer next to the model"
        )
    return folder, model_config, kind


def load_parts(
    name_or_path: str,
    config: BackendConfig | None = None,
    display_name: str | None = None,
):
    """Model, tokenizer, identity and backend settings of a model given by hub name (from the
    local cache only when offline) or local path (:func:`~.backend.load_hf` wraps them)."""
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForQuestionAnswering,
        AutoModelForSeq2SeqLM,
    )
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    config = config or BackendConfig()
    folder, model_config, kind = locate_model(name_or_path, config)
    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    encoder_decoder = bool(getattr(model_config, "is_encoder_decoder", False))
    auto_class = {
        ModelKind.MASKED: AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForMaskedLM,
        ModelKind.CAUSAL: AutoModelForCausalLM,
        ModelKind.SEQ2SEQ: AutoModelForSeq2SeqLM,
        ModelKind.EXTRACTIVE_QA: AutoModelForQuestionAnswering,
    }[kind]
    if config.allow_missing_weights:
        torch.manual_seed(0)  # missing tensors get the same values on every load
    model, loading_info = _load(
        "model weights",
        folder,
        lambda: auto_class.from_pretrained(folder, dtype=dtype, output_loading_info=True),
    )
    unused = check_loaded_tensors(folder, model, model_config, loading_info, config)
    check_finite_weights(folder, model)
    tokenizer = load_tokenizer(folder)
    check_chat(tokenizer, kind, config, display_name or name_or_path)
    model.to(device).eval()
    use_cpu_gqa(model)
    identity = ModelIdentity(
        name=display_name or name_or_path,
        kind=kind,
        fingerprint=model_fingerprint(folder),
        num_parameters=sum(p.numel() for p in model.parameters()),
        backend="hf",
        numerics=(
            ("dtype", str(dtype).removeprefix("torch.")),
            ("device_type", device.type),
            ("add_bos", str(config.add_bos)),
            *((("input_prefix", config.input_prefix),) if config.input_prefix else ()),
            *chat_identity(config),
            *((("random_tensors", "seeded"),) if unused.get("random_tensors") else ()),
        ),
        weights_sha256=weights_sha256(folder),
        details=(*unused.items(), *tokenizer_details(tokenizer)),
        source=model_source(folder, name_or_path, config.revision),
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


def model_source(
    folder: Path, name: str, revision: str | None = None
) -> tuple[tuple[str, str], ...]:
    """Where a model folder came from, as its identity records it: a hub snapshot's repo id,
    revision and commit; a converted package model's source file and its sha256; nothing for
    another local folder (its fingerprint identifies it)."""
    from biaslens.models import hub

    snapshot = hub.snapshot_source(folder, revision, name)
    if snapshot is not None:
        return snapshot.describe()
    try:
        converted = json.loads((Path(folder) / "biaslens-conversion.json").read_text())
        return (
            ("converted_from", str(converted["source"]["gguf"])),
            ("source_sha256", str(converted["source"]["sha256"])),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return ()
