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
from biaslens.errors import BiaslensError
from biaslens.framework.spec import (  # noqa: F401 - the names a method module imports
    Comparison,
    Headline,
    MethodOutput,
    MethodSpec,
    RunContext,
)
from biaslens.models.config import BackendConfig

BUILT_IN = "biaslens.methods"
"""The package whose modules are the built-in methods (each registers its own)."""

_METHODS: dict[str, MethodSpec] = {}


def register(spec: MethodSpec) -> MethodSpec:
    """Add a method to the registry (a second registration of a name is a bug, and so is a
    setting named like a backend option: ``biaslens.run(method, batch_size=16)`` would set the
    backend's batch size and leave the method's setting at its default without a word)."""
    if spec.name in _METHODS and _METHODS[spec.name] is not spec:
        raise ValueError(f"method {spec.name!r} registered twice")
    collisions = sorted(set(spec.settings.model_fields) & BackendConfig.keywords())
    if collisions:
        raise ValueError(
            f"method {spec.name!r}: setting(s) {collisions} share their name with backend "
            "options (BackendConfig); rename them"
        )
    _METHODS[spec.name] = spec
    return spec


@cache
def _import_built_in() -> tuple[str, ...]:
    """Import every module of :data:`BUILT_IN` (each registers its method); their names."""
    package = importlib.import_module(BUILT_IN)
    names = [m.name for m in pkgutil.walk_packages(package.__path__, f"{BUILT_IN}.")]
    for name in names:
        importlib.import_module(name)
    return tuple(names)


def methods() -> dict[str, MethodSpec]:
    """Every registered method by name: the built-in ones, then the plug-ins' and those
    registered elsewhere, each group in name order (whatever order their modules were imported
    in). A plug-in's entry point names a module that registers its method, or a
    :class:`MethodSpec` (registered here)."""
    _import_built_in()
    for loaded in plugins.load(plugins.METHODS).values():
        if isinstance(loaded, MethodSpec) and _METHODS.get(loaded.name) is not loaded:
            register(loaded)

    def place(spec: MethodSpec) -> tuple[bool, str]:
        module = getattr(spec.body, "__module__", "")
        return (not module.startswith(BUILT_IN + "."), spec.name)

    return {spec.name: spec for spec in sorted(_METHODS.values(), key=place)}


def get_method(name: str) -> MethodSpec:
    known = methods()
    if name not in known:
        broken = plugins.failures(plugins.METHODS).get(name)
        if broken:
            raise BiaslensError(broken)
        raise BiaslensError(f"unknown method {name!r}; methods: {', '.join(known)}")
    return known[name]
