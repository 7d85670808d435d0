"""One registry type for everything biaslens finds by name: methods, backends, registered
models and request types (as lm-evaluation-harness's ``Registry[T]``).

A :class:`Registry` holds entries of one base type by name. An entry is the object itself or a
lazy ``"module:object"`` reference, imported (and type-checked) when first asked for, so that
listing backends imports no torch. A second registration of a name is refused (the same object
again is not a second registration), and so is an object of another type; an optional
``check`` refuses entries that do not fit in one line. A frozen registry takes no more entries.
Plug-ins (entry points of the registry's ``group``, :mod:`biaslens.common.plugins`) come in
through the same :meth:`Registry.register`, after the built-in ones, never over them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from biaslens.common import plugins
from biaslens.errors import BiaslensError

T = TypeVar("T")
Check = Callable[[str, T], "str | None"]
"""``check(name, entry)``: why ``entry`` cannot be registered as ``name``, or None."""


class Registry(Generic[T]):
    """Entries of type ``base`` by name: registered once, imported when first used.

    ``what`` names an entry in messages (``"method"``, ``"backend"``); ``group`` is the
    entry-point group its plug-ins come from (None: no plug-ins)."""

    def __init__(
        self,
        what: str,
        base: type | tuple[type, ...],
        *,
        group: str | None = None,
        check: Check | None = None,
    ) -> None:
        self.what = what
        self.base = base
        self.group = group
        self.check = check
        self._entries: dict[str, T | str] = {}
        self._plugins: dict[str, str] = {}
        """Names registered from plug-ins, by the entry point that gave them."""
        self._imported: set[str] = set()
        """Names a plug-in's own import registered (a method module's ``register``)."""
        self._loaded: object = None
        self._frozen = False

    # ------------------------------------------------------------------------- registering
    def register(self, name: str, entry: T | str) -> T | str:
        """Add ``entry`` (the object, or a lazy ``"module:object"`` reference) as ``name``.

        Raises ``ValueError`` in one line: a name registered twice, a frozen registry, an
        object of another type, or what ``check`` says of it."""
        if self._frozen:
            raise ValueError(f"the {self.what} registry is frozen: {name!r} cannot be added")
        held = self._entries.get(name)
        if (
            held is not None
            and held is not entry
            and not (isinstance(entry, str) and held == entry)
        ):
            raise ValueError(f"{self.what} {name!r} registered twice")
        if not isinstance(entry, str):
            self._checked(name, entry)
        self._entries[name] = entry
        return entry

    def decorator(self, name_of: Callable[[T], str]) -> Callable[[T], T]:
        """A decorator that registers what it decorates under ``name_of(it)``."""

        def register(entry: T) -> T:
            self.register(name_of(entry), entry)
            return entry

        return register

    def freeze(self) -> None:
        """Take no more entries (a registry whose set is closed, such as request types)."""
        self._frozen = True

    def _checked(self, name: str, entry: object) -> T:
        if not isinstance(entry, self.base):
            wanted = getattr(self.base, "__name__", None) or " or ".join(
                b.__name__ for b in self.base
            )
            raise ValueError(f"{self.what} {name!r} must be a {wanted}, not {type(entry).__name__}")
        problem = self.check(name, entry) if self.check is not None else None
        if problem:
            raise ValueError(f"{self.what} {name!r}: {problem}")
        return entry  # type: ignore[return-value]

    # ---------------------------------------------------------------------------- reading
    def get(self, name: str) -> T:
        """The entry ``name`` (a lazy one imported and checked now); ``KeyError`` if none."""
        entry = self._entries[name]
        if isinstance(entry, str):
            entry = self._checked(name, plugins.imported(entry))
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """Every entry by name, in registration order (lazy ones imported now)."""
        return [(name, self.get(name)) for name in list(self._entries)]

    def chosen(self, name: str, known: dict[str, T], listed: str) -> T:
        """``known[name]`` (the entries a user may choose from), else one line: why the
        plug-in that would have it could not be loaded, or the names known (``listed``: how
        the message lists them, e.g. ``"methods: {}"``)."""
        if name in known:
            return known[name]
        problem = plugins.failures(self.group).get(name) if self.group else None
        if problem:
            raise BiaslensError(problem)
        raise BiaslensError(f"unknown {self.what} {name!r}; {listed.format(', '.join(known))}")

    def is_plugin(self, name: str) -> bool:
        return name in self._plugins

    # ---------------------------------------------------------------------------- plug-ins
    def load_plugins(self, accept: Callable[[str, object], object] | None = None) -> None:
        """Register the entry points of :attr:`group` not yet registered (again after
        :func:`plugins.refresh`). Each loaded value goes through ``accept(name, value)`` when
        given (it returns the entry to register, or None: nothing to register, e.g. a module
        whose import registered a method itself), then through :meth:`register`. A plug-in
        under a built-in's name, or one that :meth:`register` refuses, is left out and named
        once on stderr (:func:`plugins.refuse`); it never stops biaslens."""
        if self.group is None:
            return
        before = set(self._entries)
        loaded = plugins.load(self.group)  # imports the plug-ins: some register themselves
        self._imported |= set(self._entries) - before
        if loaded is self._loaded:
            return
        for name in self._plugins:
            self._entries.pop(name, None)
        self._plugins.clear()
        self._loaded = loaded
        for point, value in loaded.items():
            if self._built_in(point):
                self._refuse_built_in_name(point)
                continue
            entry = accept(point, value) if accept is not None else value
            if entry is None:
                continue
            name = getattr(entry, "name", point)
            if self._entries.get(name) is entry:  # registered by its own module's import
                continue
            if self._built_in(name):
                self._refuse_built_in_name(point, name)
                continue
            try:
                self.register(name, entry)
            except ValueError as error:
                plugins.refuse(self.group, point, str(error))
                continue
            self._plugins[name] = point

    def _refuse_built_in_name(self, point: str, name: str | None = None) -> None:
        why = f"it takes a built-in {self.what}'s name {name or point!r}: it is not used"
        plugins.refuse(self.group, point, why)

    def _built_in(self, name: str) -> bool:
        """``name`` is an entry of biaslens's own (not from a plug-in, nor registered by a
        plug-in's import)."""
        return name in self._entries and name not in self._plugins and name not in self._imported
