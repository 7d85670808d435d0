"""``biaslens metrics unqover``: UnQover's metrics of a prediction dump in UnQover's own format
(a QA model's answers scored elsewhere), without a model."""

from __future__ import annotations

import itertools
from pathlib import Path

from biaslens.common.options import Argument, Option
from biaslens.framework.hooks import CommandContext, MethodCommand


def from_predictions(ctx: CommandContext, predictions, by_intervention, output) -> None:
    """UnQover metrics (μ, η, θ4, δ, ε; per subject and subject × attribute) of a prediction
    dump in UnQover's format (keys cluster1|cluster2|subj1|subj2|tid|category|act|act)."""
    from biaslens.common import atomic
    from biaslens.data.unqover_predictions import iter_predictions
    from biaslens.metrics.unqover_stream import stream_tables
    from biaslens.metrics.unqover_summary import sparse_note, summary_lines

    chunks = iter_predictions(predictions)
    first = next(chunks)  # the first chunk tells whether keys name an intervention
    within = ("intervention",) if "intervention" in first else ()
    if by_intervention and not within:
        ctx.warning("keys have no intervention field; reporting one model-level row")
    by = within if by_intervention else ()
    tables = stream_tables(
        itertools.chain([first], chunks), by=by, within=() if by else within, intervals=(0.95, 0)
    )
    summary, subjects = tables["model"], tables["subjects"]
    for _, row in summary.iterrows():
        label = ", ".join(f"{k} {row[k]}" for k in by)
        ctx.table(
            f"UnQover metrics — {predictions.name}" + (f" ({label})" if label else ""),
            summary_lines(row),
            ["metric", "value", "cross-fitted", "interval", "units", "subjects", "templates"],
        )
        note = sparse_note(float(row["cell_units"]))
        if note:
            ctx.warning(note)
    ctx.line(
        "interval: 95%, over the crossed design of subjects × templates (both draws); μ, η, θ4: "
        "cross-fitted lower and plug-in upper bound (conservative); units: subject pair × "
        "template units"
    )
    ctx.table(
        "Subjects (max |γ| over attributes)",
        subjects.sort_values("max_abs_gamma", ascending=False).head(15),
        [*by, "subject", "max_abs_gamma", "top_attribute", "top_gamma", "mean_abs_eta"],
    )
    if output is not None:
        for name, table in tables.items():
            atomic.write_csv(Path(output) / f"{name}.csv", table)
        ctx.line(f"tables written to {output}")


FROM_PREDICTIONS = MethodCommand(
    "unqover",
    from_predictions,
    group="metrics",
    params=(
        Argument("predictions", type=Path, help="UnQover prediction JSON."),
        Option(
            "by_intervention",
            type=bool,
            default=False,
            help="One row per intervention (9th key field).",
        ),
        Option("output", "--output", "-o", type=Path, help="Write CSV tables to this folder."),
    ),
)
