"""``biaslens run METHOD``: one command per registered method, generated from its options.

Each method declares its options once, next to its settings (:class:`~biaslens.experiments.
options.Option`); this module turns them into a typer command with the runner's own options
(``--output``, ``--preset``, ``--data-dir`` where the method reads benchmark data) and, for
methods that load a model, the backend options. A new method needs no edit here.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import typer

from biaslens.cli.options import (
    CacheDir,
    DataDir,
    DryRun,
    NoCache,
    Output,
    Preset,
    add_command,
    backend_options,
    numbers,
    option_parameter,
    split_commas,
)
from biaslens.cli.render import console, print_run, print_table, run_and_print, with_progress
from biaslens.common.files import read_models_file
from biaslens.errors import BiaslensError
from biaslens.experiments.options import Option, option_default, shown_default
from biaslens.experiments.settings import SettingError

RUNNER_PARAMETERS = {
    "output": (Output, None),
    "preset": (Preset, None),
    "data_dir": (DataDir, None),
    "cache_dir": (CacheDir, None),
    "no_cache": (NoCache, False),
}


def register(run_app: typer.Typer) -> None:
    """Add ``biaslens run METHOD`` for every registered method."""
    from biaslens.experiments.registry import methods

    for name, spec in methods().items():
        add_command(run_app, name, method_command(spec))


def method_command(spec):
    """The typer command of one method (see the module docstring)."""
    options = list(spec.options)
    compares = spec.comparison is not None
    parameters = [_parameter(spec, option, compares) for option in options]
    if compares:
        parameters.append(
            option_parameter(
                "models_file", ("--models-file",), "A file with one model per line.", Path
            )
        )
    runner = ["output", "preset"] + (["data_dir"] if spec.reads_data else [])
    runner += ["cache_dir", "no_cache"] if spec.needs_model else []
    parameters += [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=RUNNER_PARAMETERS[name][1],
            annotation=RUNNER_PARAMETERS[name][0],
        )
        for name in runner
    ]
    if spec.needs_model:
        parameters.insert(0, inspect.Parameter("backend", inspect.Parameter.KEYWORD_ONLY))
        parameters.append(
            inspect.Parameter(
                "dry_run", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=DryRun
            )
        )

    def command(**given):
        try:
            _command(**given)
        except SettingError as error:
            raise BiaslensError(f"{flag_of(options, error.field)}: {error.detail}") from None

    def _command(**given):
        backend = given.pop("backend", None)
        runner_values = {name: given.pop(name) for name in runner}
        models_file = given.pop("models_file", None)
        dry_run = given.pop("dry_run", False)
        values, display = _settings_values(options, given)
        if spec.needs_model:
            runner_values["backend"] = backend
        models = values.pop("model", None) if compares else None
        if compares:
            models = list(models or ())
            if models_file is not None:
                models += read_models_file(models_file)
            if dry_run:
                for model in models or [None]:
                    _print_plan(spec, runner_values, {**values, "model": model})
                return
            if len(models) > 1:
                _run_comparison(spec, models, runner_values, values)
                return
            values["model"] = models[0] if models else None
        if dry_run:
            _print_plan(spec, runner_values, values)
            return
        result = run_and_print(spec.name, **runner_values, **values)
        if spec.extra_views is not None:
            for title, frame, columns in spec.extra_views(result, display):
                print_table(title, frame, columns)

    command.__name__ = f"run_{spec.name.replace('-', '_')}"
    command.__doc__ = f"{spec.title}." + (f"\n\n{spec.description}" if spec.description else "")
    from biaslens.experiments.estimates import meanings

    lines = meanings(spec)
    if lines:
        command.__doc__ += "\n\nReading the results:\n\n" + "\n\n".join(lines)
    command.__signature__ = inspect.Signature(parameters)
    command.__annotations__ = {
        p.name: p.annotation for p in parameters if p.annotation is not inspect.Parameter.empty
    }
    return backend_options(command) if spec.needs_model else command


def _parameter(spec, option: Option, compares: bool) -> inspect.Parameter:
    help_text = option.help
    default = shown_default(option_default(spec, option))
    if default is not None and option.type is not bool:
        help_text = f"{help_text} Default: {default}."
    multiple = option.multiple or (compares and option.keyword == "model")
    if compares and option.keyword == "model":
        help_text += " Several to compare models (Fig. 3(b))."
    value_type = bool if option.sets is not None else option.type
    return option_parameter(
        option.name,
        option.flags,
        help_text,
        value_type,
        multiple=multiple,
        default=False if option.sets is not None else None,
        minimum=option.minimum,
        hidden=option.hidden,
    )


def flag_of(options: list[Option], field: str) -> str:
    """The flag that sets a settings field (``w_kinds.0`` → ``--w``); the field itself where no
    option sets it."""
    head = field.split(".")[0]
    for option in options:
        if option.keyword.partition(".")[0] == head and not option.hidden:
            return option.flags[0].split("/")[0]
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
        if option.multiple or isinstance(value, list):
            value = _parse_many(option, value)
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


def _parse_many(option: Option, raw: list[str] | None):
    flag = option.flags[0]
    if option.type in (int, float):
        parsed = numbers(raw, option.type, flag)
    else:
        parsed = split_commas(raw, flag)
    return tuple(parsed) if parsed else None


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
    table = headline.view(comparison.table) if headline.view else comparison.table
    print_table(headline.title, table, headline.columns or None)
    console.print(f"comparison: {comparison.root / 'comparison.csv'}")
    for plot in comparison.plots:
        console.print(f"plot: {plot}")
    if comparison.report is not None:
        console.print(f"report: {comparison.report}")


def _print_plan(spec, runner_values: dict, values: dict) -> None:
    """``--dry-run``: the requests and tokens the run would send, and nothing sent."""
    from biaslens.runner import plan_method

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
