"""Command-line options declared once, and the conventions every command follows.

* Options shared by commands are ``Annotated`` aliases here (``Model``, ``Output``, …); the
  backend options (``--backend``, ``--device``, ``--dtype``, ``--batch-size`` and the served /
  distributed ones) are added to a command by :func:`backend_options`, which hands the command
  one :class:`BackendConfig`.
* Settings options default to None ("not given"): the method's settings model holds the
  defaults, and ``--preset paper`` fills in what the user did not give.
* Lists: an option that takes several values takes them space-separated after one flag
  (``--lam 0 5 50``, ``--prompt A B``) or repeated (``--lam 0 --lam 5``). The old
  comma-separated spelling (``--train-sizes 64,256``) still works, with a deprecation note.
* Numbers: NaN and infinity are refused where the option is parsed.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from biaslens.errors import BiaslensError

MULTI_VALUE_OPTIONS: dict[str, set[str]] = {}
"""Per command name: its options that take several space-separated values (every option of a
list type; filled by :func:`add_command`)."""
DEPRECATED_SPELLINGS: dict[str, str] = {
    "--mode": "--scoring (SIB commands) or --qa-mode (LEI commands)",
    "--top-k": "--top-k-tokens (CID commands) or --top-checkpoints (lei-train)",
    "--head-words": "--span-adjustment articles",
}
"""Old option name -> what replaces it (the old one still works, with a note)."""
_notes: list[str] = []


def add_command(app: typer.Typer, name: str, function) -> None:
    """Register ``function`` as command ``name`` of ``app``; its list-typed options take
    several space-separated values."""
    names: set[str] = set()
    for parameter in inspect.signature(function, eval_str=True).parameters.values():
        annotation = parameter.annotation
        metadata = getattr(annotation, "__metadata__", ())
        base = getattr(annotation, "__origin__", annotation)
        is_list = "list" in str(base) or "list[" in str(annotation)
        for info in metadata:
            if is_list and isinstance(info, typer.models.OptionInfo):
                decls = [info.default, *(info.param_decls or ())]
                names.update(d for d in decls if isinstance(d, str) and d.startswith("-"))
    MULTI_VALUE_OPTIONS[name] = names
    app.command(name)(function)


def _looks_like_value(arg: str) -> bool:
    if not arg.startswith("-"):
        return True
    try:
        float(arg)
    except ValueError:
        return False
    return True


def expand_argv(argv: list[str]) -> list[str]:
    """``--lam 0 5 50`` -> ``--lam 0 --lam 5 --lam 50`` for the command's multi-value options
    (click options take one value each); notes deprecated spellings. ``--opt=a`` forms are left
    alone."""
    path = []
    for arg in argv:
        if arg.startswith("-"):
            break
        path.append(arg)
    multi_options = MULTI_VALUE_OPTIONS.get(path[-1], set()) if path else set()
    expanded: list[str] = []
    option, taken = None, 0
    for arg in argv:
        if arg == "--":
            option = None
            expanded.append(arg)
            continue
        name = arg.split("=", 1)[0]
        if name in DEPRECATED_SPELLINGS and arg.startswith("--"):
            _note(f"{name} is deprecated; use {DEPRECATED_SPELLINGS[name]}")
        if option is not None and (taken == 0 or _looks_like_value(arg)):
            if taken:
                expanded.append(option)
            expanded.append(arg)
            taken += 1
            continue
        option, taken = (arg if arg in multi_options else None), 0
        expanded.append(arg)
    return expanded


def _note(message: str) -> None:
    if message not in _notes:
        _notes.append(message)
        print(f"note: {message}", file=sys.stderr)


def split_commas(values: list[str] | None, option: str) -> list[str] | None:
    """Values of a multi-value option, accepting the old comma-separated spelling."""
    if not values:
        return None
    out = []
    for value in values:
        if "," in value:
            _note(f"{option} a,b is deprecated; give the values space-separated ({option} a b)")
        parts = [part.strip() for part in value.split(",")]
        if not all(parts):  # an empty value must not quietly become the default
            raise BiaslensError(f"{option} got an empty value ({value!r})")
        out.extend(parts)
    return out


def numbers(values: list[str] | None, kind: type, option: str) -> list | None:
    """Numbers of a multi-value option (finite; commas accepted as above)."""
    parts = split_commas(values, option)
    if parts is None:
        return None
    try:
        parsed = [kind(p) for p in parts]
    except ValueError:
        raise BiaslensError(f"{option}: expected numbers, got {' '.join(parts)!r}") from None
    for value in parsed:
        if isinstance(value, float) and not math.isfinite(value):
            raise BiaslensError(f"{option}: {value} is not a finite number")
    return parsed


def finite(option: str):
    """A typer callback refusing NaN and infinity (for single float options)."""

    def check(value):
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, float) and not math.isfinite(v):
                raise typer.BadParameter(f"{v} is not a finite number", param_hint=option)
        return value

    return check


# ---------------------------------------------------------------------- shared options
Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Registered name (see `biaslens models list`), hub name or local model folder; "
        "with --backend openai, the name the server serves. Default: default (SmolLM2).",
    ),
]
Output = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Run directory (default: runs/<method>/<name>)."),
]
DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Folder holding the public datasets (else $BIASLENS_DATA_DIR or the download cache).",
    ),
]
CacheDir = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Folder of the request cache shared by every run (else $BIASLENS_REQUEST_CACHE_DIR "
        "or ~/.cache/biaslens/requests): answers any run computed are reused.",
    ),
]
NoCache = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Keep this run's answers in its own folder only (it still resumes): reuse nothing "
        "from, and add nothing to, the shared request cache.",
    ),
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Count the requests and estimate the prompt and completion tokens the run would "
        "send, then stop: no model is loaded and no server is called (cost of a paid API).",
    ),
]
Preset = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="paper: the paper's protocol for every setting not given (see the "
        "departures table in docs/fidelity.md); default: biaslens's defaults.",
    ),
]


# ---------------------------------------------------------------------- generated options
def option_parameter(
    name: str,
    flags: tuple[str, ...],
    help: str,
    value_type: type = str,
    *,
    multiple: bool = False,
    default: Any = None,
    minimum: float | None = None,
    hidden: bool = False,
) -> inspect.Parameter:
    """A keyword parameter of a generated command: ``typer.Option(*flags)`` of ``value_type``
    (a list of strings when ``multiple``: their values are parsed by the command), NaN and
    infinity refused for floats, ``minimum`` checked by click."""
    extra: dict[str, Any] = {"help": help, "hidden": hidden}
    if minimum is not None and value_type in (int, float):
        extra["min"] = minimum
    if value_type is float and not multiple:
        extra["callback"] = finite(flags[0])
    if multiple:
        annotation: Any = list[str] | None
    elif default is None:
        annotation = value_type | None
    else:
        annotation = value_type
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, typer.Option(*flags, **extra)],
    )


def backend_parameters() -> list[inspect.Parameter]:
    """The backend options, one per :class:`BackendConfig` field that declares a help text
    (the field's default, help and minimum are the option's)."""
    from dataclasses import MISSING, fields

    from biaslens.models.base import BackendConfig

    parameters = []
    for field in fields(BackendConfig):
        if "help" not in field.metadata:
            continue
        value_type = field.metadata.get("type") or _plain_type(field.type)
        default = None if field.default is MISSING else field.default
        parameters.append(
            option_parameter(
                field.name,
                ("--" + field.name.replace("_", "-"),),
                field.metadata["help"],
                value_type,
                default=default,
                minimum=field.metadata.get("minimum"),
            )
        )
    return parameters


def _plain_type(annotation: Any) -> type:
    """``str | None`` -> str, ``int`` -> int (field types are strings under postponed
    annotations)."""
    text = str(annotation)
    for name, kind in (("bool", bool), ("int", int), ("float", float)):
        if text.startswith(name):
            return kind
    return str


def backend_config(**values: Any):
    """The :class:`BackendConfig` of the backend options' values."""
    from biaslens.models.base import BackendConfig
    from biaslens.models.batching import parse_batch_size

    values["batch_size"] = parse_batch_size(values.get("batch_size", "auto"), "--batch-size")
    return BackendConfig(**values)


def backend_options(command):
    """Add the backend options to ``command``, which receives them as one ``backend``
    (a :class:`BackendConfig`) instead."""
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "backend"]
    added = backend_parameters()
    names = [p.name for p in added]

    @functools.wraps(command)
    def wrapper(**kwargs):
        values = {name: kwargs.pop(name) for name in names}
        return command(backend=backend_config(**values), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*kept, *added])
    wrapper.__annotations__ = {p.name: p.annotation for p in [*kept, *added]}
    return wrapper
