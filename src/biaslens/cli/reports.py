"""``biaslens report`` and ``biaslens app``."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from biaslens.cli.options import Model, add_command, backend_options
from biaslens.cli.render import console, print_warning


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="One or more run directories.")],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to write the page (default: RUN_DIR/report.html for one run, "
            "./report.html for several).",
        ),
    ] = None,
    max_samples: Annotated[
        int, typer.Option("--max-samples", min=0, help="Per-sample rows shown per run.")
    ] = 50,
) -> None:
    """Write one self-contained HTML report (plots embedded, no network needed) of run
    directories; several runs of one method get a comparison view."""
    from biaslens.report.html import write_report

    path = write_report(list(run_dirs), output, max_samples)
    console.print(f"report: {path}")


def compare(
    runs: Annotated[
        list[str], typer.Argument(help="Run folders, folders of runs or glob patterns.")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Folder for compare.csv and compare.png.")
    ] = Path("comparison"),
) -> None:
    """One table of the headline values of several runs (any methods, any models), with their
    intervals and n; writes the tidy table (compare.csv) and a forest plot (compare.png).
    Incomplete or foreign folders are listed and skipped."""
    import warnings

    import matplotlib.pyplot as plt

    from biaslens.cli.render import print_table
    from biaslens.common import atomic
    from biaslens.common.files import make_dir
    from biaslens.errors import BiaslensError
    from biaslens.report.runs_frame import comparison_figure, comparison_table, load_runs

    with warnings.catch_warnings():  # the skipped folders are printed below
        warnings.simplefilter("ignore")
        frame = load_runs(runs)
    for folder, reason in frame.attrs["skipped"]:
        print_warning(f"skipped {folder}: {reason}")
    if frame.empty:
        raise BiaslensError("no finished run with headline values among " + " ".join(runs))
    print_table("Headline values by model", comparison_table(frame))
    make_dir(output, "comparison folder")
    atomic.write_csv(output / "compare.csv", frame)
    figure = comparison_figure(frame)
    try:
        atomic.write_figure(output / "compare.png", figure)
    finally:
        plt.close(figure)
    console.print(f"table: {output / 'compare.csv'}")
    console.print(f"plot: {output / 'compare.png'}")


@backend_options
def app(
    *,
    backend,
    model: Model = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (local by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")
    ] = 7860,
) -> None:
    """Local web explorer: CID playground, specification detector (date sweep) and
    dose-response (DATE / PLACE sweep) on one model."""
    import uvicorn

    from biaslens.app.server import create_app
    from biaslens.models.registry import load_model

    try:
        local = ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = host == "localhost"
    if not local:
        print_warning(
            f"binding to {host}: anyone who can reach this address can use the model (there is "
            "no authentication)"
        )
    name = model or "default"
    console.print(f"loading {name} …")
    lm = load_model(name, backend)
    console.print(f"biaslens app on http://{host}:{port}  (model {lm.identity.name}; Ctrl-C stops)")
    uvicorn.run(create_app(lm, host=host, port=port), host=host, port=port, log_level="warning")


def register(root: typer.Typer) -> None:
    add_command(root, "report", report)
    add_command(root, "app", app)
    add_command(root, "compare", compare)
