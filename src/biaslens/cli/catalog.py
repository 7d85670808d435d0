"""What biaslens knows: ``models list``, ``methods list``, ``datasets list|download`` and the
results reference (``schema``)."""

from __future__ import annotations

import json as json_module
from collections.abc import Callable
from pathlib import Path

import click
from rich.table import Table

from biaslens.cli.params import declared_command
from biaslens.cli.render import console
from biaslens.common.options import Argument, Option
from biaslens.data.registry import DATASETS
from biaslens.data.sources import download
from biaslens.errors import BiaslensError
from biaslens.framework.options import DATA_DIR, options_of
from biaslens.framework.settings import validated
from biaslens.models.checkpoints.registered import ALIASES, MODELS
from biaslens.models.registry import backends, own_options, wrappers


@declared_command("list")
def models_list() -> None:
    """Registered model names (usable as --model; any hub name or local folder works too)
    and the backends (--backend)."""
    table = Table(title="registered models")
    for column in ("name", "aliases", "kind", "description"):
        table.add_column(column)
    for name, entry in MODELS.items():
        aliases = ", ".join(a for a, target in ALIASES.items() if target == name)
        table.add_row(name, aliases, entry.kind, entry.description)
    console.print(table)
    backend_table = Table(title="backends (--backend), and around them")
    for column in ("name", "description", "its options"):
        backend_table.add_column(column)
    for entry in (*backends().values(), *wrappers()):
        flags = " ".join(o.flag for o in own_options(entry.options) if o.rules.cli)
        backend_table.add_row(entry.name, entry.description, flags)
    console.print(backend_table)


@declared_command("list")
def methods_list() -> None:
    """Every method, with what it measures and its presets."""
    from biaslens.framework.registry import methods

    table = Table(title="methods (biaslens run METHOD)")
    for column in ("method", "what it measures", "presets"):
        table.add_column(column)
    for name, spec in methods().items():
        table.add_row(name, spec.title, ", ".join(["default", *spec.presets]))
    console.print(table)


@declared_command("list")
def datasets_list() -> None:
    """Datasets biaslens builds or loads, with their source."""
    table = Table(title="datasets")
    for column in ("name", "method", "size", "source", "available"):
        table.add_column(column)
    for info in DATASETS.values():
        table.add_row(info.name, info.method, info.size, info.source, info.available)
    console.print(table)


@declared_command(
    "download",
    Argument("name", help="Dataset name (see `biaslens datasets list`)."),
    DATA_DIR.but(help="Where to store it (default: cache)."),
)
def datasets_download(name, data_dir) -> None:
    """Fetch a dataset's files from their public repository pinned to a commit, check sha256."""
    folder = download(name, data_dir)
    console.print(f"{name}: stored in {folder}")


OVERWRITE = Option(
    "overwrite", type=bool, default=False, help="Replace a folder that is not empty."
)


@declared_command(
    "export",
    Argument("name", help="Probe set (`biaslens datasets exportable` names them)."),
    Argument("folder", type=Path, help="Folder to write (refused if not empty)."),
    Option(
        "fmt", "--format", default="parquet", help="parquet, jsonl or hf (datasets.save_to_disk)."
    ),
    OVERWRITE,
    DATA_DIR,
    Option("push_to_hub", help="Also upload it to this dataset repo (logged in)."),
)
def datasets_export(name, folder, fmt, overwrite, data_dir, push_to_hub) -> None:
    """Write a probe set as the rows a run reads, with a dataset card: loadable with
    datasets.load_dataset("parquet"/"json", ...) or load_from_disk."""
    from biaslens.data.export_writer import export_set
    from biaslens.data.export_writer import push_to_hub as push
    from biaslens.framework.registry import exportable

    done = export_set(exportable(name), folder, fmt, data_dir, overwrite)
    console.print(f"{name}: {done.rows:,} rows, {fmt}, in {done.folder} (sha256 {done.sha256})")
    if push_to_hub:
        commit = push(done.folder, push_to_hub)
        console.print(f"pushed to the dataset repo {push_to_hub} (commit {commit})")


@declared_command("exportable")
def datasets_exportable() -> None:
    """The probe sets `biaslens datasets export` writes."""
    from biaslens.framework.registry import exportable_sets

    table = Table(title="exportable probe sets")
    for column in ("name", "what", "license"):
        table.add_column(column, overflow="fold")
    for entry in exportable_sets().values():
        table.add_row(entry.name, entry.description, entry.license)
    console.print(table)


@declared_command(
    "samples",
    Argument("run", type=Path, help="A run folder."),
    Argument("target", type=Path, help="The JSON-lines file to write."),
    OVERWRITE.but(help="Replace the file."),
)
def datasets_samples(run, target, overwrite) -> None:
    """A run's per-input samples (samples.parquet) as JSON lines."""
    from biaslens.data.export_writer import export_samples

    rows = export_samples(run, target, overwrite)
    console.print(f"{rows:,} samples of {run} in {target}")


def export_lm_eval() -> click.Command:
    """``biaslens export lm-eval``: its options are those every exported task reads, and
    those of each method's task (:func:`biaslens.interop.lm_eval.tasks.task_options`)."""
    from biaslens.interop.lm_eval.tasks import ExportSettings, exporters, task_options

    names = ", ".join(exporters())

    def export(targets, limit, data_dir, overwrite, **options) -> None:
        from biaslens.interop.lm_eval.tasks import export_tasks

        limit = validated(ExportSettings, {"limit": limit}).limit
        *methods, folder = targets
        tasks = export_tasks(
            tuple(methods), Path(folder), limit or None, overwrite, data_dir, **options
        )
        for task in tasks:
            console.print(f"{task.name}: {task}")

    export.__doc__ = (
        "Write lm-evaluation-harness tasks (YAML, data, utils.py) for the methods lm-eval can "
        f"run ({names}): lm_eval --include_path DIR --tasks TASK --model hf ..."
    )
    return declared_command(
        "lm-eval",
        Argument(
            "targets",
            type=str,
            multiple=True,
            help="[METHOD...] DIR: the methods (default: every one that fits) and the folder to "
            "write.",
        ),
        *options_of(ExportSettings),
        *task_options(),
        DATA_DIR,
        OVERWRITE,
    )(export)


@declared_command(
    "schema",
    Argument("method", multiple=True, required=False, help="Methods (default: every method)."),
    Option(
        "markdown", type=bool, default=False, help="The reference as Markdown (docs/results.md)."
    ),
    Option(
        "json",
        type=bool,
        default=False,
        help="The JSON schema of summary.json, generated from its typed models "
        "(docs/summary.schema.json).",
    ),
)
def schema(method, markdown, json) -> None:
    """The files a run of each method writes, and the meaning and unit of every column."""
    from biaslens.framework.registry import methods
    from biaslens.store.output_files import COMMON, RUN_COLUMNS, OutputFile, reference

    if json:
        from biaslens.store.summary import summary_schema

        click.echo(json_module.dumps(summary_schema(), indent=2, ensure_ascii=False))
        return

    known = methods()
    unknown = [m for m in method or [] if m not in known]
    if unknown:
        raise BiaslensError(f"unknown method {unknown[0]!r}; methods: {', '.join(known)}")
    specs = [known[m] for m in method] if method else list(known.values())
    if markdown:
        click.echo(reference(specs), nl=False)
        return
    shown = [("every run", COMMON, OutputFile.meaning)]
    shown += [(s.name, s.outputs, s.meaning) for s in specs]
    for title, files, meaning in shown:
        table = Table(title=title, show_lines=False)
        for column in ("file", "column", "meaning"):
            table.add_column(column, overflow="fold")
        for file in files:
            table.add_row(file.name, "", file.what + (f" ({file.when})" if file.when else ""))
            labels = RUN_COLUMNS if file.name.endswith(".csv") and file.run_columns else ()
            for column in (*labels, *file.columns, *file.optional):
                table.add_row("", column, meaning(file, column))
        console.print(table)


def register(root: click.Group, group: Callable[..., click.Group]) -> None:
    """Add the catalogues (``models``, ``methods``, ``datasets``), ``schema`` and ``export``;
    ``group(name, help)`` makes a command group."""
    children = {
        "models": ("Models and backends biaslens knows by name.", [models_list]),
        "methods": ("The methods `biaslens run` runs.", [methods_list]),
        "datasets": (
            "Datasets biaslens can build or load.",
            [
                datasets_list,
                datasets_download,
                datasets_export,
                datasets_exportable,
                datasets_samples,
            ],
        ),
    }
    for name, (help_text, commands) in children.items():
        sub = group(name, help_text)
        for one in commands:
            sub.add_command(one)
        root.add_command(sub)
    root.add_command(
        group("export", "Export biaslens probes to other tools.", lambda: [export_lm_eval()])
    )
    root.add_command(schema)
