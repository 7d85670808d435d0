"""Click parameters from the one declaration every option has
(:class:`~biaslens.common.options.Option`, :class:`~biaslens.common.options.Argument`).

Every command of ``biaslens`` is built here from declarations: a method's options, a
backend's, and those of the other commands, in one way.

* Several values: an option with ``multiple`` takes them space-separated after one flag
  (``--lam 0 5 50``) or repeated (``--lam 0 --lam 5``); the old comma-separated spelling
  (``--train-sizes 64,256``) still works, with a note. The command spells these out as
  repeated flags before click parses them (:class:`DeclaredCommand`, through click's public
  ``Command.parse_args``).
* Numbers: NaN and infinity are refused where the option is parsed; ``minimum`` and
  ``maximum`` are checked there too.
* Deprecated flags still work, with a note naming what replaces them.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from biaslens.common.options import NO_DEFAULT, Argument, Option, number
from biaslens.errors import BiaslensError

_notes: list[str] = []


def note(message: str) -> None:
    """A ``note: …`` line on stderr, once per message and process."""
    if message not in _notes:
        _notes.append(message)
        print(f"note: {message}", file=sys.stderr)


def _looks_like_value(arg: str) -> bool:
    if not arg.startswith("-"):
        return True
    try:
        float(arg)
    except ValueError:
        return False
    return True


class Number(click.ParamType):
    """An int or a finite float within optional bounds (NaN and infinity refused)."""

    def __init__(self, kind: type, minimum: float | None = None, maximum: float | None = None):
        self.kind, self.minimum, self.maximum = kind, minimum, maximum
        self.name = kind.__name__

    def convert(self, value: Any, param, ctx) -> Any:
        try:
            return number(value, self.kind, self.minimum, self.maximum)
        except ValueError as error:
            self.fail(str(error), param, ctx)

    def get_metavar(self, param, ctx=None) -> str:
        return self.name.upper()


class DeclaredOption(click.Option):
    """A click option with what its declaration adds: whether one flag takes several values
    (``many``), whether ``a,b`` is two of them (``commas``), its deprecated flags, each with
    what replaces it (read by :class:`DeclaredCommand`), and the heading it is listed under in
    the help (``group``)."""

    def __init__(
        self,
        *args,
        many: bool = False,
        commas: bool = False,
        deprecated: dict[str, str] | None = None,
        group: str | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.many, self.commas = many, commas
        self.deprecated_flags = deprecated or {}
        self.group = group

    def split(self, value: str, flag: str) -> list[str]:
        """``a,b`` as two values (the old spelling, with a note) where the option allows it."""
        if not (self.many and self.commas and "," in value):
            return [value]
        note(f"{flag} a,b is deprecated; give the values space-separated ({flag} a b)")
        parts = [part.strip() for part in value.split(",")]
        if not all(parts):  # an empty value must not quietly become the default
            raise BiaslensError(f"{flag} got an empty value ({value!r})")
        return parts


HEADINGS = ("Method", "Data", "Model and backend", "Run and output", "Options")
"""The headings of a command's options in its help, in this order."""


class DeclaredCommand(click.Command):
    """A click command that reads its declared options' spellings before click parses the
    command line: the values after one flag of an option that takes several (``--lam 0 5
    50`` is ``--lam 0 --lam 5 --lam 50``), the old comma spelling, and a note for each
    deprecated flag used."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, spelled_out(self.params, args))

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The options under their headings (method, data, model and backend, run and
        output), in the order the headings first appear; ``--help`` last."""
        groups: dict[str, list[tuple[str, str]]] = {heading: [] for heading in HEADINGS}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                heading = getattr(param, "group", None) or "Options"
                groups.setdefault(heading, []).append(record)
        for heading, records in ((h, r) for h, r in groups.items() if r):
            with formatter.section(heading):
                formatter.write_dl(records)


def spelled_out(params: Sequence[click.Parameter], args: list[str]) -> list[str]:
    """``args`` with every value of a several-valued option after a flag of its own (see
    :class:`DeclaredCommand`); everything else as given."""
    declared = {
        flag: param
        for param in params
        if isinstance(param, DeclaredOption)
        for flag in (*param.opts, *param.secondary_opts)
    }
    out: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            out += [arg, *rest]
            break
        flag, equals, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if flag not in declared and len(arg) > 2 and arg[0] == "-" and arg[1] != "-":
            flag, equals, inline = arg[:2], "=", arg[2:]  # a short flag with its value: -pA
        option = declared.get(flag)
        if option is None:
            out.append(arg)
            continue
        if flag in option.deprecated_flags:
            note(f"{flag} is deprecated; use {option.deprecated_flags[flag]}")
        if option.is_flag or not option.many:
            out.append(arg)
            if not option.is_flag and not equals and rest:
                out.append(rest.pop(0))  # its value, whatever it looks like
            continue
        if not equals and not rest:
            out.append(arg)  # no value: click says so
            continue
        values = [inline if equals else rest.pop(0)]
        while rest and _looks_like_value(rest[0]):
            values.append(rest.pop(0))
        for value in values:
            out += [part for item in option.split(value, flag) for part in (flag, item)]
    return out


def click_type(kind: type, minimum: float | None = None, maximum: float | None = None):
    if kind in (int, float):
        return Number(kind, minimum, maximum)
    if kind is Path:
        return click.Path(path_type=Path)
    return click.STRING


def to_click(
    declared: Option | Argument,
    *,
    help: str | None = None,
    default: Any = NO_DEFAULT,
    multiple: bool | None = None,
    group: str | None = None,
) -> click.Parameter:
    """The click parameter of a declaration (``help``, ``default`` and ``multiple`` override
    the declared ones: a method shows its settings' default in the help and passes None when
    the option is not given). Its name is :attr:`Option.name` (an argument's, its keyword)."""
    if isinstance(declared, Argument):
        return click.Argument(
            [declared.keyword],
            type=click_type(declared.type),
            nargs=-1 if declared.multiple else 1,
            required=declared.required,
            metavar=declared.metavar or declared.keyword.upper(),
        )
    option = declared
    many = option.multiple if multiple is None else multiple
    value = option.default if default is NO_DEFAULT else default
    value = None if value is NO_DEFAULT else value
    decls = [*option.flags, option.name]
    settings: dict[str, Any] = {
        "help": option.help if help is None else help,
        "hidden": option.hidden,
        "required": option.required,
        "metavar": option.metavar,
        "show_default": value not in (None, (), "") and option.type is not bool,
    }
    if option.type is bool and not many:
        settings.update(is_flag=True, default=value)  # None: not given (a method's setting)
    else:
        settings.update(type=click_type(option.type, option.minimum, option.maximum), multiple=many)
        if not option.required:  # a required option has no default: click asks for it
            settings["default"] = value if not many or value is None else tuple(value)
    return DeclaredOption(
        decls,
        many=many,
        commas=many and option.commas,
        deprecated=dict(option.deprecated),
        group=group,
        **settings,
    )


def command(
    name: str,
    callback: Callable,
    params: Sequence[click.Parameter],
    help: str | None = None,
    keywords: dict[str, str] | None = None,
    summary: str | None = None,
) -> click.Command:
    """A click command calling ``callback`` with each parameter's value under its keyword
    (``keywords``: parameter name -> keyword, where they differ)."""
    renames = keywords or {}

    def invoke(**values):
        return callback(**{renames.get(k, k): v for k, v in values.items()})

    text = help if help is not None else callback.__doc__
    return DeclaredCommand(
        name,
        callback=invoke,
        params=list(params),
        help=text,
        short_help=summary or first_sentence(text or ""),
        context_settings={"help_option_names": ["--help"], "max_content_width": 100},
    )


def first_sentence(text: str) -> str:
    """The first sentence of a help text's first paragraph, whole (a command's summary in
    its group's list: never cut mid-phrase), without abbreviations taken for its end."""
    paragraph = inspect.cleandoc(text).split("\n\n", 1)[0].replace("\n", " ")
    match = re.search(
        r"^(.+?(?<!\bApp)(?<!\bFig)(?<!\be\.g)(?<!\bi\.e)(?<!\bSec)[.!?])(\s|$)", paragraph
    )
    return (match.group(1) if match else paragraph).strip()


def declared_command(name: str, *declared: Option | Argument):
    """A decorator: the function becomes command ``name`` of the declared parameters, called
    with their values by keyword."""

    def decorate(function: Callable) -> click.Command:
        params = [to_click(d) for d in declared]
        keywords = {
            d.name: d.keyword for d in declared if isinstance(d, Option) and d.name != d.keyword
        }
        return command(name, function, params, keywords=keywords)

    return decorate
