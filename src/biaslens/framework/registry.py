"""The method registry: every method, registered once by its own module.

A method module registers its :class:`~biaslens.framework.spec.MethodSpec` with
:func:`register`. The built-in methods are the modules of :mod:`biaslens.methods`, found by
walking that package; a package of the user's own adds one through a ``biaslens.methods``
entry point (:mod:`biaslens.common.plugins`). Nothing lists the methods anywhere else: the
runner, the command line, the report and the documentation ask :func:`methods`.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from biaslens.common import plugins
from biaslens.common.registry import Registry
from biaslens.data import exports
from biaslens.data.exports import SETS, ExportableSet
from biaslens.framework.spec import (  # noqa: F401 - the names a method module imports
    Comparison,
    Headline,
    MethodOutput,
    MethodSpec,
    RunContext,
)
from biaslens.models.registry import built_in_keywords

BUILT_IN = "biaslens.methods"
"""The package whose modules are the built-in methods (each registers its own)."""


def _fits(name: str, spec: MethodSpec) -> str | None:
    """Why ``spec`` cannot be registered: a setting named like a backend option
    (``biaslens.run(method, batch_size=16)`` would set the backend's batch size and leave the
    method's setting at its default without a word), or a name that is not its own."""
    if name != spec.name:
        return f"registered under another name than its own ({spec.name!r})"
    collisions = sorted(set(spec.settings.model_fields) & built_in_keywords())
    if collisions:
        return (
            f"setting(s) {collisions} share their name with backend options (BackendConfig); "
            "rename them"
        )
    return None


METHODS: Registry[MethodSpec] = Registry("method", MethodSpec, group=plugins.METHODS, check=_fits)
"""Every method registered so far, by name (:func:`methods` lists them in a fixed order)."""


def register(spec: MethodSpec) -> MethodSpec:
    """Add a method to the registry (a second registration of a name is a bug, and so is a
    setting named like a backend option)."""
    METHODS.register(spec.name, spec)
    return spec


STAGES = frozenset({"data", "scoring", "metrics", "intervals", "train", "plots"})
"""A method family's folders of building blocks (its stages of the data flow), which register
nothing and are imported by the methods that use them, not by the registry: listing the methods
loads no torch and no matplotlib."""


ADAPTERS = frozenset({"inspect_tasks"})
"""A family's modules for another framework (its inspect_ai tasks), which register nothing here
and need that framework installed: its entry point imports them, the registry does not."""


def _is_building_block(name: str) -> bool:
    parts = set(name.split(".")[2:])
    return bool(STAGES & parts) or name.rsplit(".", 1)[-1] in ADAPTERS


@cache
def _import_built_in() -> tuple[str, ...]:
    """Import every method module of :data:`BUILT_IN` (each registers its method), leaving its
    families' building blocks (:data:`STAGES`) to the methods and their adapters
    (:data:`ADAPTERS`) to the other frameworks; their names."""
    package = importlib.import_module(BUILT_IN)
    found = pkgutil.walk_packages(package.__path__, f"{BUILT_IN}.")
    names = [m.name for m in found if not _is_building_block(m.name)]
    for name in names:
        importlib.import_module(name)
    return tuple(names)


def _built_in(spec: MethodSpec) -> bool:
    return getattr(spec.body, "__module__", "").startswith(BUILT_IN + ".")


def built_in_methods() -> dict[str, MethodSpec]:
    """The methods biaslens ships, by name, without importing any plug-in."""
    _import_built_in()
    return {name: spec for name, spec in sorted(METHODS.items()) if _built_in(spec)}


def methods() -> dict[str, MethodSpec]:
    """Every registered method by name: the built-in ones, then the plug-ins' and those
    registered elsewhere, each group in name order (whatever order their modules were imported
    in). A plug-in's entry point names a module that registers its method, or a
    :class:`MethodSpec` (registered here); one under a built-in's name is left out (built-ins
    always win), with a warning."""
    built_in = built_in_methods()
    METHODS.load_plugins(
        accept=lambda _, loaded: loaded if isinstance(loaded, MethodSpec) else None
    )
    return {**built_in, **{n: s for n, s in sorted(METHODS.items()) if n not in built_in}}


def find_method(name: str) -> MethodSpec | None:
    """The method called ``name`` (a built-in one without importing any plug-in), or None."""
    return built_in_methods().get(name) or methods().get(name)


def get_method(name: str) -> MethodSpec:
    """The method called ``name``: a built-in one without importing any plug-in; else the
    plug-in's (or why the plug-in that would have it could not be loaded)."""
    built_in = built_in_methods()
    if name in built_in:
        return built_in[name]
    return METHODS.chosen(name, methods(), "methods: {}")


def exportable_sets() -> dict[str, ExportableSet]:
    """Every probe set ``biaslens datasets export`` can write: those the built-in families
    declare (each family's ``exports`` module registers its own), then the plug-ins'."""
    methods()
    return dict(SETS)


def exportable(name: str) -> ExportableSet:
    """The probe set ``name`` (:func:`exportable_sets`), or one line naming those there are."""
    return exports.exportable(name, exportable_sets())
