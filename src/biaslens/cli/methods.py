"""``biaslens run METHOD``: one command per registered method, generated from its options.

Each method declares its settings once, as its settings model's fields (their flags in their
metadata: :func:`biaslens.framework.options.options_of`); this module turns them into a click
command with the runner's own options (``--output``, ``--preset``, ``--data-dir`` where the
method reads benchmark data) and, for methods that load a model, the backend options. A method
with a ``shortcut`` also gets that top-level command (``biaslens cid``): the same options
without the run folder's. A new method needs no edit here.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from biaslens.cli.backends import backend_config, backend_params
from biaslens.cli.metrics import click_command, method_commands
from biaslens.cli.params import command, to_click
from biaslens.cli.render import (
    console,
    print_headline,
    print_run,
    print_table,
    run_and_print,
    with_progress,
)
from biaslens.common import plugins
from biaslens.common.files import read_models_file
from biaslens.common.options import Option, shown_default
from biaslens.errors import BiaslensError
from biaslens.framework import options as shared
from biaslens.framework.estimates import meanings
from biaslens.framework.settings import SettingError


class SuggestingGroup(click.Group):
    """A group that answers an unknown command with the names it is close to."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if args and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.6)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise click.UsageError(f"No such command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)


class RunGroup(SuggestingGroup):
    """``biaslens run``: a command per method, built when it is asked for (a built-in method's
    command imports no plug-in); listing them (``run --help``) finds the plug-ins' too."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from biaslens.framework.registry import methods

        return sorted(set(self.commands) | set(methods()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands:
            spec = _method_named(name)
            if spec is None:
                return None
            self.add_command(method_command(spec))
        return self.commands[name]


class RootGroup(SuggestingGroup):
    """The ``biaslens`` group: its own commands, those built when asked for (:meth:`add_lazy`:
    a command whose options come from the backends, plug-ins' included), the methods'
    shortcuts (``biaslens cid``), a built-in's found without importing any plug-in, and the
    top-level commands methods add (``biaslens cid-ratings``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, Callable[[], click.Command]] = {}

    def add_lazy(self, name: str, build: Callable[[], click.Command]) -> None:
        self.lazy[name] = build

    def list_commands(self, ctx: click.Context) -> list[str]:
        from biaslens.framework.registry import methods

        shortcuts = {spec.shortcut for spec in methods().values() if spec.shortcut}
        added = set(method_commands(None))
        return sorted(set(self.commands) | set(self.lazy) | shortcuts | added)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            self.add_command(self.lazy[name]())
        if name in self.commands:
            return self.commands[name]
        from biaslens.framework.registry import built_in_methods, methods

        for found in (built_in_methods, methods):
            for spec in found().values():
                if spec.shortcut == name:
                    self.add_command(method_command(spec, shortcut=True))
                    return self.commands[name]

        added = method_commands(None).get(name)
        if added is not None:
            self.add_command(click_command(*added))
            return self.commands[name]
        return None


def _method_named(name: str):
    """The method called ``name``; None for no such name; a one-line error for a plug-in that
    would have it but could not be loaded."""
    from biaslens.framework.registry import get_method

    try:
        return get_method(name)
    except BiaslensError:
        broken = plugins.failures(plugins.METHODS).get(name)
        if broken:
            raise BiaslensError(broken) from None
        return None


def _runner_options(spec, shortcut: bool) -> list[Option]:
    """The runner's options of a method's command (none for a shortcut but the cache's)."""
    if shortcut:
        return []
    options = [shared.OUTPUT, shared.PRESET] + ([shared.DATA_DIR] if spec.reads_data else [])
    return options + ([shared.CACHE_DIR, shared.NO_CACHE] if spec.needs_model else [])


def method_command(spec, shortcut: bool = False) -> click.Command:
    """The click command of one method (see the module docstring)."""
    options = list(spec.options)
    compares = spec.comparison is not None and not shortcut
    params = [_parameter(spec, option, compares) for option in options]
    if compares:
        params.append(to_click(shared.MODELS_FILE))
    runner = _runner_options(spec, shortcut)
    params += [
        to_click(option, group="Data" if option is shared.DATA_DIR else "Run and output")
        for option in runner
    ]
    if spec.needs_model:
        if not shortcut:
            params += [to_click(o, group="Run and output") for o in (shared.DRY_RUN, shared.PRICE)]
        params += backend_params(group="Model and backend")

    def invoke(**given):
        try:
            _invoke(spec, options, runner, compares, given)
        except SettingError as error:
            raise BiaslensError(f"{flag_of(options, error.field)}: {error.detail}") from None

    help_text = f"{spec.title}." + (f"\n\n{spec.description}" if spec.description else "")

    lines = meanings(spec)
    if lines:
        help_text += "\n\nReading the results:\n\n" + "\n\n".join(lines)
    return command(
        spec.shortcut if shortcut else spec.name,
        invoke,
        params,
        help=help_text,
        summary=spec.title,
    )


def _invoke(spec, options: list[Option], runner: list[Option], compares: bool, given) -> None:
    backend = backend_config(given) if spec.needs_model else None
    runner_values = {option.keyword: given.pop(option.name) for option in runner}
    models_file = given.pop("models_file", None)
    dry_run = given.pop("dry_run", False)
    price = given.pop("price", None)
    if price is not None and not dry_run:
        raise BiaslensError("--price estimates a run's cost with --dry-run: add --dry-run")
    values, display = _settings_values(options, given)
    if spec.needs_model:
        runner_values["backend"] = backend
    if compares:
        models = list(values.pop("model", None) or ())
        if models_file is not None:
            models += read_models_file(models_file)
        if dry_run:
            for model in models or [None]:
                _print_plan(spec, runner_values, {**values, "model": model}, price)
            return
        if len(models) > 1:
            _run_comparison(spec, models, runner_values, values)
            return
        values["model"] = models[0] if models else None
    if dry_run:
        _print_plan(spec, runner_values, values, price)
        return
    result = run_and_print(spec.name, **runner_values, **values)
    if spec.extra_views is not None:
        for title, frame, columns in spec.extra_views(result, display):
            print_table(title, frame, columns)


def _parameter(spec, option: Option, compares: bool) -> click.Parameter:
    """A method option as the command takes it: not given is None (the settings' default, or
    the preset's, applies), and the help shows the default the run would use, in click's
    style (``[default: A]``), under its heading (:func:`option_group`)."""
    help_text = option.help
    if compares and option.keyword == "model":
        help_text += " Several to compare models (Fig. 3(b))."
    default = shown_default(option.default)
    if default is None and option.keyword == "limit":
        default = "all"
    if default is not None and option.type is not bool:
        help_text = f"{help_text}  [default: {default}]"
    several = option.multiple or (compares and option.keyword == "model")
    group = option_group(option)
    if option.sets is not None:
        return to_click(option.but(type=bool), help=help_text, default=False, group=group)
    return to_click(option, help=help_text, default=None, multiple=several, group=group)


def option_group(option: Option) -> str:
    """The heading a method command's option is listed under in its help."""
    if option.keyword == "model":
        return "Model and backend"
    if option.display:
        return "Run and output"
    if option.type is Path or option.keyword in ("limit", "data_dir"):
        return "Data"
    return "Method"


def flag_of(options: list[Option], field: str) -> str:
    """The flag that sets a settings field (``w_kinds.0`` → ``--w``); the field itself where no
    option sets it."""
    head = field.split(".")[0]
    for option in options:
        if option.keyword.partition(".")[0] == head and not option.hidden:
            return option.flag
    return head


def _settings_values(options: list[Option], given: dict[str, Any]) -> tuple[dict, dict]:
    """The settings keywords of the given values (None: not given), and the display options."""
    values: dict[str, Any] = {}
    display: dict[str, Any] = {}
    switches = []
    for option in options:
        value = given.get(option.name)
        if option.sets is not None:
            switches.append((option, value))
            continue
        if isinstance(value, (list, tuple)):
            value = tuple(value) or None  # nothing given
        target = display if option.display else values
        head, _, key = option.keyword.partition(".")
        if key:
            if value is not None:
                target.setdefault(head, {})[key] = value
            else:
                target.setdefault(head, None)
        elif value is not None or head not in target:
            target[head] = value
    for option, on in switches:
        if on and values.get(option.keyword) is None:
            values[option.keyword] = option.sets
    return values, display


def _run_comparison(spec, models: list[str], runner_values: dict, values: dict) -> None:
    from biaslens.runner import run_comparison

    comparison = with_progress(
        lambda progress: run_comparison(
            spec.name, models, progress=progress, **runner_values, **values
        )
    )
    for result in comparison.runs:
        print_run(result, spec)
    headline = spec.comparison.headline
    print_headline(spec, headline, comparison.table, headline.title)
    console.print(f"comparison: {comparison.root / 'comparison.csv'}")
    for plot in comparison.plots:
        console.print(f"plot: {plot}")
    if comparison.report is not None:
        console.print(f"report: {comparison.report}")


def _print_plan(spec, runner_values: dict, values: dict, price: str | None = None) -> None:
    """``--dry-run``: the requests and tokens the run would send (and their cost at ``price``
    per million tokens), and nothing sent."""
    from biaslens.runner import plan_method
    from biaslens.runner.plan import estimated_cost, parse_price

    prices = parse_price(price) if price is not None else None
    plan = with_progress(
        lambda progress: plan_method(spec.name, progress=progress, **runner_values, **values)
    )
    print_table(f"{spec.name} --dry-run: {plan.model} ({plan.backend} backend)", plan.table)
    console.print(
        f"tokens counted with {plan.counted_by}; completion tokens are the most the run may "
        "generate. Nothing was loaded or sent."
    )
    for note in plan.notes:
        console.print(f"note: {note}")
    if prices is not None:
        console.print(estimated_cost(plan.table, *prices))
