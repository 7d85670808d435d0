"""Helpers shared by the command modules (kept light: no torch import at start-up)."""

from __future__ import annotations

from rich.console import Console


def backend_config(device: str, dtype: str, batch_size: str):
    """The backend settings of the ``--device``, ``--dtype`` and ``--batch-size`` options."""
    from biaslens.models.batching import parse_batch_size
    from biaslens.models.hf import BackendConfig

    return BackendConfig(
        device=device, dtype=dtype, batch_size=parse_batch_size(batch_size, "--batch-size")
    )


def print_cache_stats(console: Console, stats: dict) -> None:
    """How many requests a run computed and how many it reused from its request cache."""
    console.print(
        f"requests: {stats['computed']} computed, {stats['cached']} reused from the cache"
    )


def write_run_report(console: Console, run_dirs: list, output=None) -> None:
    """Write the HTML report of finished run(s) and print its path; a report problem is a
    warning, never a failed run."""
    from biaslens.errors import BiaslensError
    from biaslens.report.html import write_report

    try:
        path = write_report(list(run_dirs), output)
    except BiaslensError as error:
        console.print(f"[yellow]warning:[/] no report: {error}")
        return
    console.print(f"report: {path}")
