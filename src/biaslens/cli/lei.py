"""UnQover commands besides ``biaslens run``: ``metrics unqover``."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated

import typer

from biaslens.cli.options import (
    add_command,
)
from biaslens.cli.render import console, print_table, print_warning


def metrics_unqover(
    predictions: Annotated[Path, typer.Argument(help="UnQover prediction JSON.")],
    by_intervention: Annotated[
        bool, typer.Option("--by-intervention", help="One row per intervention (9th key field).")
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write CSV tables to this folder.")
    ] = None,
) -> None:
    """UnQover metrics (μ, η, θ4, δ, ε; per subject and subject × attribute) of a prediction
    dump in UnQover's format (keys cluster1|cluster2|subj1|subj2|tid|category|act|act)."""
    from biaslens.common import atomic
    from biaslens.data.unqover_predictions import iter_predictions
    from biaslens.metrics.unqover_stream import stream_tables

    chunks = iter_predictions(predictions)
    first = next(chunks)  # the first chunk tells whether keys name an intervention
    within = ("intervention",) if "intervention" in first else ()
    if by_intervention and not within:
        print_warning("keys have no intervention field; reporting one model-level row")
    by = within if by_intervention else ()
    tables = stream_tables(itertools.chain([first], chunks), by=by, within=() if by else within)
    summary, subjects = tables["model"], tables["subjects"]
    print_table(
        f"UnQover metrics — {predictions.name}",
        summary,
        [*by, "mu", "eta", "theta4", "delta", "epsilon", "contexts"],
    )
    print_table(
        "Subjects (max |γ| over attributes)",
        subjects.sort_values("max_abs_gamma", ascending=False).head(15),
        [*by, "subject", "max_abs_gamma", "top_attribute", "top_gamma", "mean_abs_eta"],
    )
    if output is not None:
        for name, table in tables.items():
            atomic.write_csv(Path(output) / f"{name}.csv", table)
        console.print(f"tables written to {output}")


def register(run_app: typer.Typer, metrics_app: typer.Typer) -> None:
    add_command(metrics_app, "unqover", metrics_unqover)
