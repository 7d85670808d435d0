"""Loading a transformers model: device, dtype, model kind, identity, and clear errors.

One place decides device and dtype. A folder that is not a loadable model (no config, damaged or
random weights, no tokenizer files) is a one-line :class:`BiaslensError` naming the folder.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch

from biaslens.common.hashing import sha256_files
from biaslens.errors import BiaslensError
from biaslens.models.base import KIND_NAMES, BackendConfig, ModelIdentity, ModelKind

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
POSITION_OFFSET_MODELS = {"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"}
"""Models whose position ids start after the padding index (usable length = positions − pad − 1)."""

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


def device_description(device: torch.device) -> str:
    """The device's model and, for a CPU, the threads torch uses (what decides the best batch
    size), e.g. ``NVIDIA H100 80GB HBM3`` or ``AMD EPYC 7B13 x2``."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type != "cpu":
        return device.type
    import platform

    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name} x{torch.get_num_threads()}"


def cpu_has_bf16_units() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True  # cannot tell (macOS, Windows): do not warn
    return any(flag in flags for flag in ("avx512_bf16", "amx_bf16"))


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


def context_limit(model, tokenizer) -> int | None:
    """The most tokens one input may have: the model's position table and the tokenizer's
    ``model_max_length`` (when set), whichever is smaller; None when neither says."""
    config = model.config
    limits = []
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "n_ctx"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            if name == "max_position_embeddings" and config.model_type in POSITION_OFFSET_MODELS:
                value -= (getattr(config, "pad_token_id", None) or 0) + 1
            limits.append(value)
            break
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and 0 < declared < 1_000_000:
        limits.append(declared)
    return min(limits) if limits else None


def local_folder(name_or_path: str) -> Path | None:
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise BiaslensError(f"model {name_or_path}: a file, not a model folder")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception:
        return None


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


def load_hf(
    name_or_path: str,
    config: BackendConfig | None = None,
    display_name: str | None = None,
):
    """Load a model by hub name (from the local cache only when offline) or local path."""
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForQuestionAnswering,
        AutoModelForSeq2SeqLM,
        AutoTokenizer,
    )
    from transformers.utils import logging as hf_logging

    from biaslens.models.hf.backend import HFBackend

    hf_logging.disable_progress_bar()
    config = config or BackendConfig()
    folder = local_folder(name_or_path)
    if folder is None:
        raise BiaslensError(
            f"unknown model {name_or_path!r}: not a registered name (see `biaslens models list`), "
            "not a local folder, and not in the local Hugging Face cache"
        )
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
    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    encoder_decoder = bool(getattr(model_config, "is_encoder_decoder", False))
    auto_class = {
        ModelKind.MASKED: AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForMaskedLM,
        ModelKind.CAUSAL: AutoModelForCausalLM,
        ModelKind.SEQ2SEQ: AutoModelForSeq2SeqLM,
        ModelKind.EXTRACTIVE_QA: AutoModelForQuestionAnswering,
    }[kind]
    model = _load("model weights", folder, lambda: auto_class.from_pretrained(folder, dtype=dtype))
    tokenizer = _load("tokenizer", folder, lambda: AutoTokenizer.from_pretrained(folder))
    model.to(device).eval()
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
        ),
        weights_sha256=weights_sha256(folder),
    )
    return HFBackend(model, tokenizer, identity, config)
