"""The backend of a run and its options, in one object: :class:`BackendConfig`.

``BackendConfig()`` is the default backend with its defaults; ``BackendConfig(backend="openai",
base_url=URL, concurrency=4)`` another with some options. ``config.options`` is an instance of
the backend's options model (:mod:`biaslens.models.options` and each backend's package), read
as attributes (``config.options.concurrency``): a value is parsed and checked by its field
once, and an option the chosen backend does not take is refused unless it keeps its default,
so nothing a user gives is recorded but unused.
"""

from __future__ import annotations

import difflib
from typing import Any

from biaslens.errors import BiaslensError
from biaslens.models import registry
from biaslens.models.options import OptionGroup


class BackendConfig:
    """A backend (``backend``, its name) and its options (``options``, a typed model of the
    options it takes). Frozen, comparable and hashable."""

    __slots__ = ("backend", "options")
    backend: str
    options: OptionGroup

    def __init__(self, backend: str | None = None, **options: Any) -> None:
        backend = registry.DEFAULT_BACKEND if backend is None else backend
        spec = registry.get_backend(backend)
        model = registry.options_model(spec)
        declared = registry.declared_options()
        taken = {}
        for keyword, value in options.items():
            if keyword not in declared:
                close = difflib.get_close_matches(keyword, sorted(declared), n=2, cutoff=0.6)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise BiaslensError(f"unknown backend option {keyword!r}{hint}")
            if keyword in model.model_fields:
                taken[keyword] = value
                continue
            option, owners = declared[keyword]
            if option.value_of(value) != option.default:
                raise BiaslensError(_not_taken(option, backend, owners, declared))
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "options", model(**taken))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("BackendConfig is frozen: use with_options(...)")

    def _compared(self) -> tuple:
        return (self.backend, self.options.compared())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BackendConfig):
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        given = ", ".join(f"{k}={v!r}" for k, v in self.given().items())
        return f"BackendConfig(backend={self.backend!r}{', ' if given else ''}{given})"

    def __reduce__(self):  # sent to model replicas: rebuilt (and checked) from its values
        return (_rebuild, (self.to_dict(),))

    def given(self) -> dict[str, Any]:
        """The options that differ from their defaults."""
        return self.options.given()

    def to_dict(self) -> dict[str, Any]:
        """``backend`` and the options that differ from their defaults:
        ``BackendConfig(**config.to_dict()) == config``."""
        return {"backend": self.backend, **self.given()}

    def with_options(self, **changes: Any) -> BackendConfig:
        """A copy with some options changed (``backend`` too)."""
        return BackendConfig(**{**self.to_dict(), **changes})

    def describe(self) -> dict[str, Any]:
        """The settings as recorded in a run's ``summary.json``: the backend and its options,
        as their fields' rules say (:meth:`~biaslens.models.options.OptionGroup.recorded`)."""
        return {"backend": self.backend, **self.options.recorded()}

    @staticmethod
    def keywords() -> set[str]:
        """Every keyword a backend option answers to (``backend`` too)."""
        return {"backend", *registry.declared_options()}


def _rebuild(values: dict[str, Any]) -> BackendConfig:
    return BackendConfig(**values)


def _not_taken(option, backend: str, owners: tuple[str, ...], declared: dict) -> str:
    """Why ``option`` was refused on ``backend``: the backends that take it, and the options
    that apply to those only."""
    only = [o.flag for o, where in declared.values() if where == owners and o.rules.cli]
    which = " or ".join(owners)
    why = f": {option.rules.elsewhere}" if option.rules.elsewhere else ""
    listing = f" (options that apply to the {which} backend only: {', '.join(only)})"
    return (
        f"{option.flag} does not apply to the {backend} backend{why}"
        f"{listing if only else ''}; it needs --backend {which}"
    )
