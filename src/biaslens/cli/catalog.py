"""What biaslens knows: ``models list``, ``methods list``, ``datasets list|download`` and the
results reference (``schema``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from biaslens.cli.options import DataDir, add_command
from biaslens.cli.render import console

models_app = typer.Typer(
    help="Models and backends biaslens knows by name.", no_args_is_help=True, rich_markup_mode=None
)
datasets_app = typer.Typer(
    help="Datasets biaslens can build or load.", no_args_is_help=True, rich_markup_mode=None
)
methods_app = typer.Typer(
    help="The methods `biaslens run` runs.", no_args_is_help=True, rich_markup_mode=None
)


def models_list() -> None:
    """Registered model names (usable as --model; any hub name or local folder works too)
    and the backends (--backend)."""
    from biaslens.models.registry import ALIASES, REGISTRY, backends

    table = Table(title="registered models")
    for column in ("name", "aliases", "kind", "description"):
        table.add_column(column)
    for name, entry in REGISTRY.items():
        aliases = ", ".join(a for a, target in ALIASES.items() if target == name)
        table.add_row(name, aliases, entry.kind, entry.description)
    console.print(table)
    backend_table = Table(title="backends (--backend)")
    for column in ("name", "description"):
        backend_table.add_column(column)
    for entry in backends().values():
        backend_table.add_row(entry.name, entry.description)
    console.print(backend_table)


def methods_list() -> None:
    """Every method, with what it measures and its presets."""
    from biaslens.experiments.registry import methods

    table = Table(title="methods (biaslens run METHOD)")
    for column in ("method", "what it measures", "presets"):
        table.add_column(column)
    for name, spec in methods().items():
        table.add_row(name, spec.title, ", ".join(["default", *spec.presets]))
    console.print(table)


def datasets_list() -> None:
    """Datasets biaslens builds or loads, with their source."""
    from biaslens.data.registry import DATASETS

    table = Table(title="datasets")
    for column in ("name", "method", "size", "source", "available"):
        table.add_column(column)
    for info in DATASETS.values():
        table.add_row(info.name, info.method, info.size, info.source, info.available)
    console.print(table)


def datasets_download(
    name: Annotated[str, typer.Argument(help="Dataset name (see `biaslens datasets list`).")],
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Where to store it (default: cache).")
    ] = None,
) -> None:
    """Fetch a dataset's files from their public repository pinned to a commit, check sha256."""
    from biaslens.data.sources import download

    folder = download(name, data_dir)
    console.print(f"{name}: stored in {folder}")


def datasets_export(
    name: Annotated[
        str, typer.Argument(help="Probe set (`biaslens datasets exportable` names them).")
    ],
    folder: Annotated[Path, typer.Argument(help="Folder to write (refused if not empty).")],
    fmt: Annotated[
        str, typer.Option("--format", help="parquet, jsonl or hf (datasets.save_to_disk).")
    ] = "parquet",
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace a folder that is not empty.")
    ] = False,
    data_dir: DataDir = None,
    push_to_hub: Annotated[
        str | None,
        typer.Option("--push-to-hub", help="Also upload it to this dataset repo (logged in)."),
    ] = None,
) -> None:
    """Write a probe set as the rows a run reads, with a dataset card: loadable with
    datasets.load_dataset("parquet"/"json", ...) or load_from_disk."""
    from biaslens.data.export_writer import export_set
    from biaslens.data.export_writer import push_to_hub as push
    from biaslens.data.exports import exportable

    done = export_set(exportable(name), folder, fmt, data_dir, overwrite)
    console.print(f"{name}: {done.rows:,} rows, {fmt}, in {done.folder} (sha256 {done.sha256})")
    if push_to_hub:
        commit = push(done.folder, push_to_hub)
        console.print(f"pushed to the dataset repo {push_to_hub} (commit {commit})")


def datasets_exportable() -> None:
    """The probe sets `biaslens datasets export` writes."""
    from biaslens.data.exports import EXPORTS

    table = Table(title="exportable probe sets")
    for column in ("name", "what", "license"):
        table.add_column(column, overflow="fold")
    for entry in EXPORTS.values():
        table.add_row(entry.name, entry.description, entry.license)
    console.print(table)


def datasets_samples(
    run: Annotated[Path, typer.Argument(help="A run folder.")],
    target: Annotated[Path, typer.Argument(help="The JSON-lines file to write.")],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the file.")] = False,
) -> None:
    """A run's per-input samples (samples.parquet) as JSON lines."""
    from biaslens.data.export_writer import export_samples

    rows = export_samples(run, target, overwrite)
    console.print(f"{rows:,} samples of {run} in {target}")


export_app = typer.Typer(help="Export biaslens probes to other tools.", no_args_is_help=True)


def export_lm_eval(
    targets: Annotated[
        list[str],
        typer.Argument(
            help="[METHOD...] DIR: the methods (default: every one that fits) and "
            "the folder to write.",
            show_default=False,
        ),
    ],
    limit: Annotated[
        int | None, typer.Option("--limit", help="Inputs per W value (as biaslens run's).")
    ] = None,
    prompt: Annotated[str, typer.Option("--prompt", help="MGC prompt: A, B or C.")] = "A",
    w_kind: Annotated[str, typer.Option("--w", help="MGC W kind: dates or places.")] = "dates",
    domain: Annotated[
        str, typer.Option("--domain", help="LEI domain: religion, ethnicity or gender.")
    ] = "religion",
    data_dir: DataDir = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace a folder that is not empty.")
    ] = False,
) -> None:
    """Write lm-evaluation-harness tasks (YAML, data, utils.py) for the probes lm-eval can run
    (sib-mgc, sib-detect, lei-eval): lm_eval --include_path DIR --tasks biaslens_mgc
    --model hf ..."""
    from biaslens.experiments.lm_eval_tasks import export_tasks

    *methods, folder = targets
    tasks = export_tasks(
        tuple(methods), Path(folder), limit or None, prompt, w_kind, overwrite, domain, data_dir
    )
    for task in tasks:
        console.print(f"{task.name}: {task}")


def schema(
    method: Annotated[
        list[str] | None,
        typer.Argument(help="Methods (default: every method).", show_default=False),
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="The reference as Markdown (docs/results.md).")
    ] = False,
) -> None:
    """The files a run of each method writes, and the meaning and unit of every column."""
    from biaslens.errors import BiaslensError
    from biaslens.experiments.registry import methods
    from biaslens.store.schema import COMMON, RUN_COLUMNS, reference

    known = methods()
    unknown = [m for m in method or [] if m not in known]
    if unknown:
        raise BiaslensError(f"unknown method {unknown[0]!r}; methods: {', '.join(known)}")
    specs = [known[m] for m in method] if method else list(known.values())
    if markdown:
        typer.echo(reference(specs), nl=False)
        return
    for title, files in [("every run", COMMON), *((s.name, s.outputs) for s in specs)]:
        table = Table(title=title, show_lines=False)
        for column in ("file", "column", "meaning"):
            table.add_column(column, overflow="fold")
        for file in files:
            table.add_row(file.name, "", file.what + (f" ({file.when})" if file.when else ""))
            labels = RUN_COLUMNS if file.name.endswith(".csv") and file.run_columns else ()
            for column in (*labels, *file.columns, *file.optional):
                table.add_row("", column, file.meaning(column))
        console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
    app.add_typer(datasets_app, name="datasets")
    app.add_typer(methods_app, name="methods")
    add_command(models_app, "list", models_list)
    add_command(methods_app, "list", methods_list)
    add_command(datasets_app, "list", datasets_list)
    add_command(datasets_app, "download", datasets_download)
    add_command(datasets_app, "export", datasets_export)
    add_command(datasets_app, "exportable", datasets_exportable)
    add_command(datasets_app, "samples", datasets_samples)
    add_command(app, "schema", schema)
    app.add_typer(export_app, name="export")
    add_command(export_app, "lm-eval", export_lm_eval)
