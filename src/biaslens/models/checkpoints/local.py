"""A model's checkpoint folder, read without loading it: which files define it, its kind, its
fingerprint, where it came from, its tokenizer.

Every backend that loads a checkpoint (and ``--dry-run``, which loads none) finds and checks
it here: a folder that cannot be a loadable model is a one-line :class:`BiaslensError` naming
the folder, before any weights are read.
"""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path

from biaslens.common.hashing import sha256_files
from biaslens.errors import BiaslensError
from biaslens.models.checkpoints import hub
from biaslens.models.checkpoints.reference import CheckpointRef
from biaslens.models.kinds import KIND_NAMES, ModelKind

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


def refuse_custom_code(folder: Path) -> None:
    """A model whose config or tokenizer needs code from its own repository (an ``auto_map``
    for a type transformers does not ship) is refused with one line naming the file that
    would run: biaslens never runs a model repository's code (every load passes
    ``trust_remote_code=False``, so transformers never asks either)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    files = {}
    for name in ("config.json", "tokenizer_config.json"):
        try:
            files[name] = json.loads((Path(folder) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    for name, data in files.items():
        auto_map = data.get("auto_map") if isinstance(data, dict) else None
        if not isinstance(auto_map, dict) or not auto_map:
            continue
        if name == "config.json" and data.get("model_type") in CONFIG_MAPPING:
            continue  # transformers' own class of this type loads it; the repo's code is unused
        if name == "tokenizer_config.json" and not _needs_tokenizer_code(data):
            continue
        entry = next(iter(auto_map.values()))
        entry = entry[0] if isinstance(entry, list) and entry else entry
        module = str(entry).split("--")[-1].rsplit(".", 1)[0]
        raise BiaslensError(
            f"{folder}: its {name} asks to run the repository's own code ({module}.py, by "
            "auto_map); biaslens never runs code from a model repository: use a model of a "
            "type transformers ships"
        )


def _needs_tokenizer_code(tokenizer_config: dict) -> bool:
    import transformers

    name = str(tokenizer_config.get("tokenizer_class") or "")
    return (
        bool(name)
        and not hasattr(transformers, name)
        and not hasattr(transformers, name.removesuffix("Fast"))
    )


def load_or_refuse(what: str, folder: Path, load):
    """``load()``, with a file it cannot read turned into one line naming ``folder``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load()
    except (OSError, ValueError, RuntimeError, KeyError, TypeError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BiaslensError(f"{folder}: cannot load the {what} ({message[:300]})") from None
    except pickle.UnpicklingError:
        raise BiaslensError(
            f"{folder}: the {what} are a pickle holding more than tensors, which would run code "
            "on loading; biaslens loads weights only (convert them to *.safetensors)"
        ) from None
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

    return load_or_refuse(
        "tokenizer",
        Path(folder),
        lambda: AutoTokenizer.from_pretrained(folder, trust_remote_code=False),
    )


def locate_model(ref: CheckpointRef, offline: bool = False, model_kind: str = "auto"):
    """The model's folder, config and kind (``model_kind``: a ``--model-kind`` name), checked
    without loading its weights: a folder that cannot be a loadable model is a one-line error
    here (``biaslens`` checks every model of a multi-model run this way before the first one
    runs)."""
    from transformers import AutoConfig

    folder = ref.folder(offline)
    if not (folder / "config.json").is_file():
        raise BiaslensError(f"{folder}: no config.json; not a transformers model folder")
    refuse_custom_code(folder)
    model_config = load_or_refuse(
        "model config", folder, lambda: AutoConfig.from_pretrained(folder, trust_remote_code=False)
    )
    kind = detect_kind(model_config, model_kind)
    if not weight_files(folder):
        raise BiaslensError(f"{folder}: no weight files (*.safetensors or *.bin)")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise BiaslensError(
            f"{folder}: no tokenizer files (tokenizer.json, vocab, merges or sentencepiece "
            "model); save the tokenizer next to the model"
        )
    return folder, model_config, kind


def model_source(folder: Path, ref: CheckpointRef) -> tuple[tuple[str, str], ...]:
    """Where a model folder came from, as its identity records it: a hub snapshot's repo id,
    revision and commit; a converted package model's source file and its sha256; nothing for
    another local folder (its fingerprint identifies it)."""
    snapshot = hub.snapshot_source(folder, ref.revision)
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
