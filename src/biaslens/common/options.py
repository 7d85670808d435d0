"""What the command line is generated from: :class:`Option` and :class:`Argument`.

A method's setting is declared once, as a field of its settings model (type, default, bounds
and help); the field's :class:`Flag` says how the command line spells it (flags, deprecated
spellings), and :func:`biaslens.framework.options.options_of` reads the :class:`Option`\\ s of
``biaslens run METHOD`` from the model. A backend's options and the other commands' options
are declared as :class:`Option`\\ s directly. The command line is generated from these
(:mod:`biaslens.cli.params`), and so are ``biaslens.settings(...)`` and the generated
documentation; nothing restates a flag, a help text or a default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

NO_DEFAULT = object()
"""An option's ``default`` when it has no fixed value (a switch that sets another setting)."""


@dataclass(frozen=True, init=False)
class Flag:
    """How the command line spells a settings field: kept in the field's metadata
    (``Annotated[int, Flag("--top-k-tokens", "--top-k", deprecated={"--top-k": …})]``).

    * ``flags``: its names (default: ``--field-name``); ``deprecated``: flags kept for old
      command lines, each with what replaces it;
    * ``shown``: the default as the help words it, where the field's own default (None) stands
      for a value chosen later (``A`` for MGC's prompts);
    * ``commas``: ``a,b`` is read as two values (False for values that may hold a comma);
      ``metavar``: how the help names the value;
    * ``switch``: ``(flag, value)``, a deprecated on/off flag that sets the field to ``value``;
    * ``nested``: the field is a settings model whose own flagged fields are options too:
      ``"fill"`` (their keywords are their own names, e.g. CID's ``lams``) or ``"keys"``
      (``weights.ethical``); ``skip`` leaves some out and ``helps`` words some for this use.
    """

    flags: tuple[str, ...]
    deprecated: tuple[tuple[str, str], ...] = ()
    shown: str | None = None
    commas: bool = True
    metavar: str | None = None
    switch: tuple[str, Any] | None = None
    nested: str | None = None
    skip: tuple[str, ...] = ()
    helps: tuple[tuple[str, str], ...] = ()

    def __init__(
        self,
        *flags: str,
        deprecated: dict[str, str] | None = None,
        helps: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        object.__setattr__(self, "flags", flags)
        object.__setattr__(self, "deprecated", tuple((deprecated or {}).items()))
        object.__setattr__(self, "helps", tuple((helps or {}).items()))
        for declared in fields(self):
            if declared.name not in ("flags", "deprecated", "helps"):
                value = options.pop(declared.name, declared.default)
                object.__setattr__(self, declared.name, value)
        if options:
            raise TypeError(f"Flag has no field(s) {sorted(options)}")


FLAG = Flag()
"""A setting given on the command line by its field's name (``--ci-level``)."""


@dataclass(frozen=True, init=False)
class Option:
    """One option.

    * ``keyword``: the keyword it fills (``a.b`` fills key ``b`` of dict setting ``a``);
    * ``flags``: its names (the first is the main one; ``--x/--no-x`` for an on/off switch);
    * ``type``: ``str``, ``int``, ``float``, ``bool`` or ``Path`` (of each value when
      ``multiple``); ``multiple``: several values (``--lam 0 5 50``), passed as a tuple;
    * ``default``: the value when the option is not given (a method's option: its field's
      default, shown in the help; :data:`NO_DEFAULT`: none); ``minimum`` / ``maximum``: the
      bounds the command line accepts (a method's option leaves them to its settings model);
    * ``required``: the command line refuses to run without it;
    * ``sets``: a flag without a value that sets ``keyword`` to this (when not given otherwise);
    * ``hidden``: kept for old command lines, not shown in the help;
    * ``display``: changes only what the command prints after a run (never a setting);
    * ``deprecated``: flags kept for old command lines, each with what replaces it (a note is
      printed when one is used);
    * ``commas``: with ``multiple``, ``a,b`` is read as two values (the old spelling, with a
      note); False for values that may hold a comma (stop strings);
    * ``metavar``: how the help names its value.
    """

    keyword: str
    flags: tuple[str, ...]
    help: str
    type: type = str
    multiple: bool = False
    default: Any = NO_DEFAULT
    minimum: float | None = None
    maximum: float | None = None
    required: bool = False
    sets: Any = None
    hidden: bool = False
    display: bool = False
    deprecated: tuple[tuple[str, str], ...] = ()
    commas: bool = True
    metavar: str | None = None

    def __init__(self, keyword: str, *flags: str, help: str, **options: Any) -> None:
        object.__setattr__(self, "keyword", keyword)
        object.__setattr__(self, "flags", flags or ("--" + keyword.replace("_", "-"),))
        object.__setattr__(self, "help", help)
        known = {f.name: f for f in fields(self)}
        unknown = set(options) - set(known)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        for name, declared in known.items():
            if name in ("keyword", "flags", "help"):
                continue
            object.__setattr__(self, name, options.get(name, declared.default))

    def but(self, **changes: Any) -> Option:
        """A copy with some fields changed (e.g. a shared option with its own help)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)} | changes
        keyword, flags, help_text = values.pop("keyword"), values.pop("flags"), values.pop("help")
        return type(self)(keyword, *flags, help=help_text, **values)

    @property
    def name(self) -> str:
        """The parameter name of a generated command (from the main flag)."""
        return self.flags[0].split("/")[0].lstrip("-").replace("-", "_")

    @property
    def flag(self) -> str:
        """The main flag (``--batch-size``), as messages name the option."""
        return self.flags[0].split("/")[0]


@dataclass(frozen=True, init=False)
class Argument:
    """A positional argument of a command: the keyword it fills, its help and value type;
    ``multiple``: one or more values (a tuple); ``required``: False lets it be left out."""

    keyword: str
    help: str
    type: type = str
    multiple: bool = False
    required: bool = True
    metavar: str | None = None

    def __init__(self, keyword: str, *, help: str, **options: Any) -> None:
        object.__setattr__(self, "keyword", keyword)
        object.__setattr__(self, "help", help)
        for declared in fields(self):
            if declared.name not in ("keyword", "help"):
                object.__setattr__(
                    self, declared.name, options.get(declared.name, declared.default)
                )


def shown_default(value: Any) -> str | None:
    """A default as the help shows it (None: not shown)."""
    if value is NO_DEFAULT or value is None or value == () or value == "":
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (tuple, list)):
        return " ".join(shown_default(v) or repr(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Path):
        return str(value)
    text = str(value)
    return text if text.isprintable() and text.strip() == text else repr(text)


def number(value: Any, kind: type, minimum: float | None = None, maximum: float | None = None):
    """``value`` as an ``int`` or a finite ``float`` (``kind``) within the bounds; text such as
    the command line gives is read, a bool or (for an int) a float is not. A ``ValueError``
    says what is wrong."""
    what = "integers" if kind is int else "numbers"
    if isinstance(value, str):
        try:
            value = kind(value)
        except ValueError:
            raise ValueError(f"expected {what}, got {value!r}") from None
    allowed = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ValueError(f"expected {what}, got {value!r}")
    value = kind(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    if minimum is not None and value < minimum:
        raise ValueError(f"{value} is not >= {minimum:g}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{value} is not <= {maximum:g}")
    return value
