"""Plug-ins found through entry points: a package of the user's own adds a method or a backend
without a change to biaslens, as pytest and lm-evaluation-harness find theirs.

A plug-in package declares, in its ``pyproject.toml``::

    [project.entry-points."biaslens.methods"]
    my-probe = "my_package.probe"              # a module whose import registers a MethodSpec

    [project.entry-points."biaslens.backends"]
    my-backend = "my_package.backend:BACKEND"  # a biaslens.models.registry.RegisteredBackend

Once installed, ``biaslens run my-probe`` and ``--backend my-backend`` work like the built-in
ones. Plug-ins are imported only when something needs them (a command naming no plug-in, such as
``biaslens --version`` or ``run sib-toy``, imports none), and built-ins always win: a plug-in
under a built-in's name is left out. A plug-in that cannot be imported never stops biaslens,
whatever it raises (``SystemExit`` included) or if its import does not finish within
``$BIASLENS_PLUGIN_TIMEOUT`` seconds (default 20): it is named once on stderr with its error,
left out, and named again where the user asks for it by name. ``BIASLENS_NO_PLUGINS=1`` loads
none.
"""

from __future__ import annotations

import importlib
import sys
import threading
from functools import cache
from importlib import metadata
from typing import Any

from biaslens.common.env import flag_from_env, number_from_env

METHODS = "biaslens.methods"
BACKENDS = "biaslens.backends"
NO_PLUGINS_ENV = "BIASLENS_NO_PLUGINS"
"""Set to 1: no plug-in is loaded (biaslens as it ships, whatever is installed beside it)."""
TIMEOUT_ENV = "BIASLENS_PLUGIN_TIMEOUT"
DEFAULT_TIMEOUT = 20.0
"""Seconds a plug-in's import may take before it is left out (its import goes on, unused)."""

_FAILED: dict[str, dict[str, str]] = {}


def imported(reference: str) -> Any:
    """The object a ``"module:name"`` reference names (as an entry point's value does), its
    module imported now: a backend's loader or planner, a method's lm-eval task writer."""
    module, name = reference.split(":")
    return getattr(importlib.import_module(module), name)


def _origin(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else entry.value


@cache
def load(group: str) -> dict[str, object]:
    """Every entry point of ``group`` loaded, by name (sorted); those that fail are left out
    and listed by :func:`failures`."""
    loaded: dict[str, object] = {}
    failed = _FAILED.setdefault(group, {})
    if flag_from_env(NO_PLUGINS_ENV):
        return loaded
    timeout = number_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT, float, 0.1, 3600, "seconds")
    for entry in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
        value, problem = _import(entry, timeout)
        if problem is None:
            loaded[entry.name] = value
            continue
        failed[entry.name] = (
            f"the {group} plug-in {entry.name!r} ({entry.value}, from {_origin(entry)}) "
            f"could not be loaded: {problem}"
        )
        print(f"warning: {failed[entry.name]}", file=sys.stderr)
    return loaded


def _import(entry: metadata.EntryPoint, timeout: float) -> tuple[object, str | None]:
    """``entry.load()`` in a thread of its own: its value, or why there is none (whatever it
    raised, ``SystemExit`` included, or that it did not finish within ``timeout`` seconds)."""
    outcome: list = []

    def load() -> None:
        try:
            outcome.append((entry.load(), None))
        except BaseException as error:  # noqa: BLE001 - a plug-in must not stop biaslens
            text = str(error).strip().splitlines()[0] if str(error).strip() else ""
            outcome.append((None, f"{type(error).__name__}: {text[:300]}".rstrip(": ")))

    thread = threading.Thread(target=load, name=f"plug-in {entry.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        return None, f"its import did not finish within {timeout:g} s ({TIMEOUT_ENV})"
    return outcome[0]


def refuse(group: str, name: str, why: str) -> None:
    """Leave out the loaded plug-in ``name`` of ``group`` (it would replace a built-in, or it
    is not what its group takes), named once on stderr with ``why``."""
    message = f"the {group} plug-in {name!r}: {why}"
    if _FAILED.setdefault(group, {}).get(name) != message:
        _FAILED[group][name] = message
        print(f"warning: {message}", file=sys.stderr)


def failures(group: str) -> dict[str, str]:
    """The plug-ins of ``group`` that could not be loaded, by name, with why."""
    load(group)
    return dict(_FAILED.get(group, {}))


def refresh() -> None:
    """Find plug-ins again (after installing one into the running interpreter)."""
    load.cache_clear()
    _FAILED.clear()
