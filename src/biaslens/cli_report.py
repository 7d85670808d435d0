"""``biaslens report`` and ``biaslens app`` (registered on the app in ``biaslens.cli``)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import typer
from rich.console import Console

from biaslens.cli_common import backend_config

console = Console()


def report(
    run_dirs: list[Path] = typer.Argument(..., help="One or more run directories."),
    output: Path = typer.Option(
        None,
        "--output",
        "-o",
        help="Where to write the page (default: RUN_DIR/report.html for one run, "
        "./report.html for several).",
    ),
    max_samples: int = typer.Option(50, "--max-samples", help="Per-sample rows shown per run."),
) -> None:
    """Write one self-contained HTML report (plots embedded, no network needed) of run
    directories; several runs of one method get a comparison view."""
    from biaslens.report.html import write_report

    path = write_report(list(run_dirs), output, max_samples)
    console.print(f"report: {path}")


def app(
    model: str = typer.Option("default", "--model", "-m", help="Registered name or folder."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (local by default)."),
    port: int = typer.Option(7860, "--port", help="Port to listen on."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:N, mps."),
    dtype: str = typer.Option("auto", "--dtype", help="auto, float32, bfloat16, float16."),
    batch_size: str = typer.Option("auto", "--batch-size", help="auto or N."),
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
        console.print(
            f"[yellow]warning:[/] binding to {host}: anyone who can reach this address can use "
            "the model (there is no authentication)"
        )
    console.print(f"loading {model} …")
    lm = load_model(model, backend_config(device, dtype, batch_size))
    console.print(f"biaslens app on http://{host}:{port}  (model {lm.identity.name}; Ctrl-C stops)")
    uvicorn.run(create_app(lm), host=host, port=port, log_level="warning")


def register(root: typer.Typer) -> None:
    root.command("report")(report)
    root.command("app")(app)
