"""The backends, as lm-evaluation-harness registers its models (the models biaslens knows by
name are :mod:`biaslens.models.checkpoints.registered`'s).

* A backend is a package of :mod:`biaslens.models.backends` whose ``BACKEND`` is a
  :class:`RegisteredBackend`: its loader (imported only when used), its options (their
  defaults, help and checks), what ``--dry-run`` knows of a model without loading it, and the
  packages a run records. A package of the user's own adds one through a
  ``biaslens.backends`` entry point (:mod:`biaslens.common.plugins`). :func:`backends` finds
  them all; nothing else in biaslens names a backend.

:data:`BACKENDS` (a :class:`~biaslens.common.registry.Registry`) holds them.
``load_model(name, config)`` (:mod:`biaslens.models.loader`) resolves the checkpoint from the
name and the backend from ``config.backend``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from biaslens.common import plugins
from biaslens.common.registry import Registry
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
      loading it (:mod:`biaslens.models.runtime.dry_run`; default: read from its checkpoint);
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


# ------------------------------------------------------------------------------ backends
BACKENDS: Registry[RegisteredBackend] = Registry(
    "backend", RegisteredBackend, group=plugins.BACKENDS, check=lambda name, b: _fits(name, b)
)
"""Every backend found so far, by name: the built-in ones, then the plug-ins' once needed."""


@cache
def _built_in() -> tuple[RegisteredBackend, ...]:
    """The backends of :data:`BUILT_IN`'s sub-packages (registered now), the default first."""
    package = importlib.import_module(BUILT_IN)
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            declared = importlib.import_module(f"{BUILT_IN}.{module.name}").BACKEND
            try:
                BACKENDS.register(declared.name, declared)
            except ValueError as error:  # a built-in backend that does not fit: a bug
                raise TypeError(str(error)) from None
    found = [BACKENDS.get(name) for name in BACKENDS if not BACKENDS.is_plugin(name)]
    return tuple(sorted(found, key=lambda b: (b.name != DEFAULT_BACKEND, b.name)))


def _accept(point: str, loaded: object) -> RegisteredBackend | None:
    """A plug-in's entry point must name a :class:`RegisteredBackend` of its own name."""
    if isinstance(loaded, RegisteredBackend) and loaded.name == point:
        return loaded
    plugins.refuse(
        plugins.BACKENDS,
        point,
        f"its entry point must name a RegisteredBackend called "
        f"{point!r}, not {type(loaded).__name__}",
    )
    return None


def _all() -> dict[str, RegisteredBackend]:
    """Every usable backend (wrappers included) by name: the built-in ones, then the
    plug-ins' (found again after :func:`plugins.refresh`)."""
    built_in = _built_in()
    BACKENDS.load_plugins(accept=_accept)
    return {**{b.name: b for b in built_in}, **dict(BACKENDS.items())}


def _fits(name: str, backend: RegisteredBackend) -> str | None:
    """Why ``backend`` cannot be registered: options that do not fit its kind, or that another
    backend declares otherwise."""
    others = [BACKENDS.get(n) for n in BACKENDS if n != name]
    return _unfit(backend) or _option_clash(backend, others)


@cache
def _options(found: tuple[RegisteredBackend, ...]) -> dict:
    """Every option by keyword, with the backends that take it (every backend's and the
    wrappers' are taken by all); cached by the backends found."""
    choosable = [b.name for b in found if b.switch is None]
    wrapping = [o for b in found if b.switch is not None for o in own_options(b.options)]
    every = (*declarations(BackendOptions).values(), *wrapping)
    options = {o.keyword: (o, tuple(choosable)) for o in every}
    for backend in found:
        if backend.switch is not None:
            continue
        for option in own_options(backend.options):
            declared, owners = options.get(option.keyword, (option, ()))
            options[option.keyword] = (declared, (*owners, backend.name))
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
    return {name: b for name, b in _all().items() if b.switch is None}


def wrappers() -> tuple[RegisteredBackend, ...]:
    """The backends that wrap the chosen one when their switch is on (model replicas)."""
    return tuple(b for b in _all().values() if b.switch is not None)


def get_backend(name: str) -> RegisteredBackend:
    return BACKENDS.chosen(name, backends(), "use one of {}")


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
    _built_in()
    return tuple(backend for _, backend in BACKENDS.items())


def built_in_keywords() -> set[str]:
    """The keywords of the built-in backends' options (``backend`` too), read without
    importing any plug-in."""
    return {"backend", *_options(_built_in())}


def declared_options() -> dict[str, tuple[BackendOption, tuple[str, ...]]]:
    """Every backend option, by keyword, with the backends that take it (every backend's and
    the wrappers' are taken by all). Several backends that take one option share its
    declaration (:mod:`biaslens.models.options`)."""
    return _options(tuple(_all().values()))


def backend_choices_help() -> str:
    """The ``--backend`` help: each backend with its few words."""
    parts = [f"{n} ({b.summary})" if b.summary else n for n, b in backends().items()]
    listed = ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]
    return f"{listed}."
