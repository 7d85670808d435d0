"""``biaslens report``, ``biaslens compare`` and ``biaslens app``."""

from __future__ import annotations

import ipaddress
import warnings
from pathlib import Path
from typing import Annotated

import uvicorn
from pydantic import BaseModel, ConfigDict, Field

from biaslens.cli.backends import backend_config, backend_params
from biaslens.cli.params import command, declared_command, to_click
from biaslens.cli.render import console, print_table, print_warning
from biaslens.common import atomic
from biaslens.common.files import make_dir
from biaslens.common.options import FLAG, Argument, Option
from biaslens.errors import BiaslensError
from biaslens.framework.options import options_of
from biaslens.framework.settings import ModelName, validated
from biaslens.models.loader import load_model


@declared_command(
    "report",
    Argument("run_dirs", type=Path, multiple=True, help="One or more run directories."),
    Option(
        "output",
        "--output",
        "-o",
        type=Path,
        help="Where to write the page (default: RUN_DIR/report.html for one run, "
        "./report.html for several).",
    ),
    Option("max_samples", type=int, default=50, minimum=0, help="Per-sample rows shown per run."),
)
def report(run_dirs, output, max_samples):
    """Write one self-contained HTML report (plots embedded, no network needed) of run
    directories; several runs of one method get a comparison view."""
    from biaslens.report.html import write_report

    path = write_report(list(run_dirs), output, max_samples)
    console.print(f"report: {path}")


MAX_PRINTED_ROWS = 60
"""The most rows ``compare`` prints (compare.csv holds all)."""


@declared_command(
    "compare",
    Argument("runs", multiple=True, help="Run folders, folders of runs or glob patterns."),
    Option(
        "output",
        "--output",
        "-o",
        type=Path,
        default=Path("comparison"),
        help="Folder for compare.csv and compare.png.",
    ),
)
def compare(runs, output):
    """One table of the headline values of several runs (any methods, any models), with their
    intervals and n; writes the tidy table (compare.csv) and a forest plot (compare.png).
    Incomplete or foreign folders are listed and skipped."""

    import matplotlib.pyplot as plt

    from biaslens.report.runs_frame import (
        MAX_PLOTTED,
        comparison_figure,
        comparison_table,
        load_runs,
    )

    runs = list(runs)
    with warnings.catch_warnings():  # the skipped folders are printed below
        warnings.simplefilter("ignore")
        frame = load_runs(runs)
    for folder, reason in frame.attrs["skipped"]:
        print_warning(f"skipped {folder}: {reason}")
    if frame.empty:
        raise BiaslensError("no finished run with headline values among " + " ".join(runs))
    table = comparison_table(frame)
    title = "Headline values by model"
    if len(table) > MAX_PRINTED_ROWS:
        title += f" (the first {MAX_PRINTED_ROWS} of {len(table)} rows: all in compare.csv)"
    print_table(title, table.head(MAX_PRINTED_ROWS))
    make_dir(output, "comparison folder")
    atomic.write_csv(output / "compare.csv", frame)
    console.print(f"table: {output / 'compare.csv'}")
    figure = comparison_figure(frame)
    if figure is None:
        (output / "compare.png").unlink(missing_ok=True)  # not an older comparison's plot
        console.print(
            f"plot: none ({len(frame)} values are more than a plot can show: {MAX_PLOTTED})"
        )
        return
    try:
        atomic.write_figure(output / "compare.png", figure)
    finally:
        plt.close(figure)
    console.print(f"plot: {output / 'compare.png'}")


class AppSettings(BaseModel):
    """``biaslens app``: the model the explorer loads and where it listens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: ModelName = "default"
    host: Annotated[str, FLAG] = Field(
        default="127.0.0.1", description="Address to bind (local by default)."
    )
    port: Annotated[int, FLAG] = Field(
        default=7860, ge=1, le=65535, description="Port to listen on."
    )


APP_OPTIONS = options_of(AppSettings)


def app(**values) -> None:
    """Local web explorer: CID playground, specification detector (date sweep) and
    dose-response (DATE / PLACE sweep) on one model."""

    from biaslens.app.server import create_app

    backend = backend_config(values)
    chosen = validated(AppSettings, {k: values[k] for k in AppSettings.model_fields})
    host, port = chosen.host, chosen.port
    try:
        local = ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = host == "localhost"
    if not local:
        print_warning(
            f"binding to {host}: anyone who can reach this address can use the model (there is "
            "no authentication)"
        )
    name = chosen.model
    console.print(f"loading {name} …")
    lm = load_model(name, backend)
    console.print(f"biaslens app on http://{host}:{port}  (model {lm.identity.name}; Ctrl-C stops)")
    uvicorn.run(create_app(lm, host=host, port=port), host=host, port=port, log_level="warning")


def register(root) -> None:
    root.add_command(report)
    root.add_command(compare)
    root.add_lazy(  # its backend options include the plug-ins': built when asked for
        "app", lambda: command("app", app, [*(to_click(o) for o in APP_OPTIONS), *backend_params()])
    )
