"""A method's command-line options, read from its settings model, and the runner's.

A setting is declared once, as a field of the method's settings model: its type, default,
bounds and help (the field's ``description``) are the field's, and a
:class:`~biaslens.common.options.Flag` in its metadata makes it an option of
``biaslens run METHOD`` and says how the command line spells it. :func:`options_of` turns the
flagged fields into the :class:`~biaslens.common.options.Option`\\ s the command line, the
Python names (:mod:`.names`) and the documentation are generated from. Values are checked once,
by the settings model; the command line only reads text as the field's type.

The runner's options (where a run goes, the preset, the request cache, the benchmark data,
``--dry-run``) are declared at the end, once for every command that takes them.
"""

from __future__ import annotations

import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from biaslens.common.options import NO_DEFAULT, Flag, Option
from biaslens.framework.settings import validated


@cache
def options_of(
    settings: type[BaseModel], fields: tuple[str, ...] | None = None
) -> tuple[Option, ...]:
    """The options of a settings model: one per field with a :class:`Flag`, in field order (a
    ``nested`` field's own flagged fields where it stands), each deprecated ``switch`` after
    its field's option; ``fields``: those fields' only (a command that takes a few of a
    method's settings, such as an lm-eval export's)."""
    found: list[Option] = []
    unknown = set(fields or ()) - set(settings.model_fields)
    if unknown:
        raise TypeError(f"{settings.__name__} has no field(s) {sorted(unknown)}")
    for name, field in settings.model_fields.items():
        if fields is not None and name not in fields:
            continue
        flag = _flag(field)
        if flag is None:
            continue
        if flag.nested is not None:
            found += _nested(name, field, flag)
            continue
        found.append(_option(settings.__name__, name, field, flag))
        if flag.switch is not None:
            found.append(_switch(name, found[-1], flag))
    return tuple(found)


def filled(settings: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the keywords of each ``Flag(nested="fill")`` field's model (CID's
    ``lams``, ``top_k`` …) moved into that field, validated on top of the field's default: what
    a ``make_settings`` validates."""
    values = dict(values)
    for name, field in settings.model_fields.items():
        flag = _flag(field)
        if flag is None or flag.nested != "fill":
            continue
        model = field.annotation
        given = {k: values.pop(k) for k in list(values) if k in model.model_fields}
        default = field.get_default(call_default_factory=True)
        values[name] = validated(model, {**default.model_dump(), **given})
    return values


def _flag(field: FieldInfo) -> Flag | None:
    flags = [item for item in field.metadata if isinstance(item, Flag)]
    return flags[-1] if flags else None


def _option(
    owner: str,
    keyword: str,
    field: FieldInfo,
    flag: Flag,
    help: str | None = None,
    default: Any = NO_DEFAULT,
) -> Option:
    help = help or field.description
    if not help:
        raise TypeError(f"{owner}.{keyword} has a Flag but no description (its help)")
    kind, multiple = value_type(field.annotation)
    if default is NO_DEFAULT:
        default = None if field.is_required() else field.get_default(call_default_factory=True)
    return Option(
        keyword,
        *(flag.flags or ("--" + keyword.replace("_", "-"),)),
        help=help,
        type=kind,
        multiple=multiple,
        default=flag.shown if flag.shown is not None else default,
        required=field.is_required(),
        deprecated=flag.deprecated,
        commas=flag.commas,
        metavar=flag.metavar,
    )


def _switch(keyword: str, option: Option, flag: Flag) -> Option:
    """A deprecated on/off flag that sets ``keyword`` to a value (``--head-words``)."""
    switch, value = flag.switch
    replacement = f"{option.flag} {value}"
    return Option(
        keyword,
        switch,
        help=f"Deprecated: {replacement}.",
        type=bool,
        sets=value,
        hidden=True,
        deprecated=((switch, replacement),),
    )


def _nested(name: str, field: FieldInfo, flag: Flag) -> list[Option]:
    """The flagged fields of a nested settings model (``fill``: by their own names, ``keys``:
    as ``name.key``), with the outer field's default's values as their defaults."""
    model = field.annotation
    outer = field.get_default(call_default_factory=True)
    helps = dict(flag.helps)
    found = []
    for inner, inner_field in model.model_fields.items():
        inner_flag = _flag(inner_field)
        if inner_flag is None or inner in flag.skip:
            continue
        keyword = inner if flag.nested == "fill" else f"{name}.{inner}"
        default = getattr(outer, inner) if outer is not None else NO_DEFAULT
        found.append(
            _option(model.__name__, keyword, inner_field, inner_flag, helps.get(inner), default)
        )
    return found


def value_type(annotation: Any) -> tuple[type, bool]:
    """The type of one value of a field (str, int, float, bool or Path) and whether it takes
    several (a tuple)."""
    annotation = _without_none(annotation)
    if get_origin(annotation) in (tuple, list):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return _scalar(_without_none(args[0]) if args else str), True
    return _scalar(annotation), False


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _scalar(annotation: Any) -> type:
    if get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Literal:
        annotation = type(get_args(annotation)[0])
    if annotation in (str, int, float, bool, Path):
        return annotation
    raise TypeError(f"a command-line option cannot take values of type {annotation!r}")


# ------------------------------------------------------------------ the runner's options
OUTPUT = Option(
    "output", "--output", "-o", type=Path, help="Run directory (default: runs/<method>/<name>)."
)
PRESET = Option(
    "preset",
    help="paper: the paper's protocol for every setting not given (see the departures table in "
    "docs/fidelity.md); default: biaslens's defaults.",
)
DATA_DIR = Option(
    "data_dir",
    type=Path,
    help="Folder holding the public datasets (else $BIASLENS_DATA_DIR or the download cache).",
)
CACHE_DIR = Option(
    "cache_dir",
    type=Path,
    help="Folder of the request cache shared by every run (else $BIASLENS_REQUEST_CACHE_DIR or "
    "~/.cache/biaslens/requests): answers any run computed are reused.",
)
NO_CACHE = Option(
    "no_cache",
    type=bool,
    default=False,
    help="Keep this run's answers in its own folder only (it still resumes): reuse nothing "
    "from, and add nothing to, the shared request cache.",
)
DRY_RUN = Option(
    "dry_run",
    type=bool,
    default=False,
    help="Count the requests and estimate the prompt and completion tokens the run would send, "
    "then stop: no model is loaded and no server is called (cost of a paid API).",
)
PRICE = Option(
    "price",
    help="With --dry-run: the price per million tokens, one number for all or PROMPT,COMPLETION "
    "(e.g. 0.15,0.60), to estimate the run's cost.",
)
MODELS_FILE = Option("models_file", type=Path, help="A file with one model per line.")
