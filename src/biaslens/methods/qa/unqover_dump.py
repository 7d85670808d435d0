"""``biaslens metrics unqover``: UnQover's metrics of a prediction dump in UnQover's own format
(a QA model's answers scored elsewhere), without a model."""

from __future__ import annotations

import itertools
from pathlib import Path

from biaslens.common import atomic
from biaslens.common.options import Argument, Option
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import CommandContext, MethodCommand
from biaslens.framework.options import options_of
from biaslens.framework.settings import MethodSettings, SubjectsAre, validated
from biaslens.metrics.intervals import IntervalSpec


class DumpSettings(MethodSettings):
    """The settings ``metrics unqover`` takes, declared by the same type as the methods'."""

    subjects_are: SubjectsAre = "auto"


def subjects_of_clusters(clusters, choice: str) -> str:
    """``drawn`` or ``fixed`` for a dump whose subjects come from these key clusters: the
    ``choice`` unless ``auto``, then drawn where the clusters are a named domain's lists
    (gender's female and male first names), fixed otherwise."""
    from biaslens.methods.qa.data.unqover import DOMAINS

    if choice != "auto":
        return choice
    named = {name for domain in DOMAINS.values() if domain.named for name in domain.subjects}
    return "drawn" if set(clusters) <= named else "fixed"


def from_predictions(
    ctx: CommandContext, predictions, by_intervention, output, subjects_are="auto"
) -> None:
    """UnQover metrics (μ, η, θ4, δ, ε; per subject and subject × attribute) of a prediction
    dump in UnQover's format (keys cluster1|cluster2|subj1|subj2|tid|category|act|act)."""
    from biaslens.methods.qa.data.unqover_predictions import iter_predictions
    from biaslens.methods.qa.metrics.unqover_stream import stream_tables
    from biaslens.methods.qa.metrics.unqover_summary import (
        sparse_note,
        subjects_note,
        summary_lines,
    )

    chosen = validated(DumpSettings, {"subjects_are": subjects_are}).subjects_are
    chunks = iter_predictions(predictions)
    first = next(chunks)  # the first chunk tells whether keys name an intervention
    within = ("intervention",) if "intervention" in first else ()
    if by_intervention and not within:
        ctx.warning("keys have no intervention field; reporting one model-level row")
    by = within if by_intervention else ()
    clusters = first["first_cluster"].unique() if "first_cluster" in first else ()
    subjects_are = subjects_of_clusters(clusters, chosen)
    spec = IntervalSpec(subjects=subjects_are, complete_design=True)
    try:
        tables = stream_tables(
            itertools.chain([first], chunks), by=by, within=() if by else within, intervals=spec
        )
    except BiaslensError as error:  # a context the file lacks or repeats: name the file
        if str(predictions) in str(error):
            raise
        raise BiaslensError(f"{predictions}: {error}") from None
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
        incomplete = row.get("mu_ci_note")
        if isinstance(incomplete, str) and incomplete.startswith("not a complete"):
            ctx.warning(incomplete)
    drawn = "subjects and templates both draws" if subjects_are == "drawn" else "templates drawn"
    ctx.line(
        f"interval: 95%, over the crossed design of subjects × templates ({drawn}); μ, η, θ4: "
        "cross-fitted lower and plug-in upper bound (conservative); units: subject pair × "
        "template units"
    )
    ctx.line(subjects_note(subjects_are))
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
        *options_of(DumpSettings),
    ),
)
