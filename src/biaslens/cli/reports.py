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
