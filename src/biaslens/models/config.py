"""The backend of a run and its options, in one object: :class:`BackendConfig`.

``BackendConfig()`` is the default backend with its defaults; ``BackendConfig(backend="openai",
base_url=URL, concurrency=4)`` another with some options. The options are those the backends
declare (:mod:`biaslens.models.options` and each backend's package): a value is parsed and
checked by its declaration once, here, and an option the chosen backend does not take is
refused unless it keeps its default, so nothing a user gives is recorded but unused.
"""

from __future__ import annotations

import difflib
from typing import Any

from biaslens.errors import BiaslensError
from biaslens.models import registry


class BackendConfig:
    """A backend and its options (see the module docstring). Every declared option reads as an
    attribute: its value, or its default where it was not given or the backend does not take
    it. Frozen, comparable and hashable."""

    __slots__ = ("backend", "_values")

    def __init__(self, backend: str | None = None, **options: Any) -> None:
        backend = registry.DEFAULT_BACKEND if backend is None else backend
        spec = registry.get_backend(backend)
        declared = registry.declared_options()
        taken = {o.keyword: o for o in registry.options_of(spec)}
        values: dict[str, Any] = {}
        for keyword, value in options.items():
            if keyword not in declared:
                close = difflib.get_close_matches(keyword, sorted(declared), n=2, cutoff=0.6)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise BiaslensError(f"unknown backend option {keyword!r}{hint}")
            option, owners = declared[keyword]
            value = option.value_of(value)
            if keyword not in taken:
                if value != option.default:
                    raise BiaslensError(_not_taken(option, backend, owners, declared))
                continue
            values[keyword] = value
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "_values", values)
        for option in taken.values():
            if option.requires is not None:
                problem = option.requires(getattr(self, option.keyword), self)
                if problem:
                    raise BiaslensError(problem)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        declared = registry.declared_options()
        if name in declared:
            return declared[name][0].default
        raise AttributeError(f"BackendConfig has no option {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("BackendConfig is frozen: use with_options(...)")

    def _compared(self) -> tuple:
        declared = registry.declared_options()
        return (
            self.backend,
            tuple(
                sorted(
                    (k, repr(getattr(self, k)))
                    for k, (option, _) in declared.items()
                    if option.compare
                )
            ),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BackendConfig):
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.given().items())
        return f"BackendConfig(backend={self.backend!r}{', ' if given else ''}{given})"

    def __reduce__(self):  # pickled for model replicas: rebuilt (and checked) from its values
        return (_rebuild, (self.to_dict(),))

    def given(self) -> dict[str, Any]:
        """The options that differ from their defaults."""
        declared = registry.declared_options()
        return {k: v for k, v in self._values.items() if v != declared[k][0].default}

    def to_dict(self) -> dict[str, Any]:
        """``backend`` and the options that differ from their defaults:
        ``BackendConfig(**config.to_dict()) == config``."""
        return {"backend": self.backend, **self.given()}

    def with_options(self, **changes: Any) -> BackendConfig:
        """A copy with some options changed (``backend`` too)."""
        return BackendConfig(**{**self.to_dict(), **changes})

    def describe(self) -> dict[str, Any]:
        """The settings as recorded in a run's ``summary.json``: the backend and the options it
        takes, as each declares (no secrets: only the name of a key's environment variable,
        a URL without its password)."""
        described: dict[str, Any] = {"backend": self.backend}
        for option in registry.options_of(registry.get_backend(self.backend)):
            value = getattr(self, option.keyword)
            if option.record == "never" or (option.record == "set" and value == option.default):
                continue
            if option.record != "always" and value in (None, "", {}):
                continue
            described[option.keyword] = (
                option.recorded_as(value) if option.recorded_as is not None else value
            )
        return described

    @staticmethod
    def default_of(keyword: str) -> Any:
        """The default of the backend option ``keyword``."""
        return registry.declared_options()[keyword][0].default

    @staticmethod
    def keywords() -> set[str]:
        """Every keyword a backend option answers to (``backend`` too)."""
        return {"backend", *registry.declared_options()}


def _rebuild(values: dict[str, Any]) -> BackendConfig:
    return BackendConfig(**values)


def _not_taken(option, backend: str, owners: tuple[str, ...], declared: dict) -> str:
    """Why ``option`` was refused on ``backend``: the backends that take it, and the options
    that apply to those only."""
    only = [o.flag for o, where in declared.values() if where == owners and o.cli]
    which = " or ".join(owners)
    why = f": {option.elsewhere}" if option.elsewhere else ""
    listing = f" (options that apply to the {which} backend only: {', '.join(only)})"
    return (
        f"{option.flag} does not apply to the {backend} backend{why}"
        f"{listing if only else ''}; it needs --backend {which}"
    )
