"""UnQover's intervals as a run shows them: the summary row's columns, a reader's lines, the
note on sparse cells, LEI's gap, and shares over the crossed design of subject pairs ×
templates (:mod:`.intervals.unqover`, :mod:`.intervals.crossed`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from biaslens.common.numbers import readable, readable_interval
from biaslens.methods.qa.intervals.unqover import MAXIMA, METRICS
from biaslens.methods.qa.metrics.unqover import MEASURES, unordered_pair
from biaslens.metrics.intervals import IntervalSpec
from biaslens.metrics.intervals.crossed import Design
from biaslens.metrics.intervals.crossed_ratios import ratio_interval
from biaslens.metrics.meanings import mostly_noise

MIN_CELL_UNITS = 4
"""Below this median number of units per (subject, attribute) cell, μ, η and θ4's plug-in
values are mostly noise (η is 1 for any one-unit cell): they are marked sparse."""


def sparse_note(cell_units: float) -> str | None:
    """Why μ, η and θ4's plug-in values are not to be read, where their cells are too thin."""
    if not math.isfinite(cell_units) or cell_units >= MIN_CELL_UNITS:
        return None
    return (
        f"sparse cells: μ, η and θ4 rest on a median of {cell_units:g} subject pair × template "
        "unit(s) per "
        f"(subject, attribute) cell (fewer than {MIN_CELL_UNITS}): their plug-in values are "
        "mostly noise (η is 1 for any one-unit cell); read the cross-fitted values and the "
        "intervals, or draw more subjects and templates"
    )


def subjects_note(subjects_are: str, subjects: int | None = None) -> str:
    """The run's line saying what its intervals take the subjects to be."""
    count = f"the {subjects} subjects" if subjects else "the subjects"
    if subjects_are == "fixed":
        return (
            f"intervals take {count} as fixed, the population asked about: they describe the "
            "model on these subjects over templates like these (--subjects-are drawn: over "
            "subjects like these too)"
        )
    return (
        f"intervals take {count} as draws (names): they describe the model over subjects and "
        "templates like these (--subjects-are fixed: on these subjects only)"
    )


def with_intervals(summary: pd.DataFrame, bounds: dict) -> pd.DataFrame:
    """The one-row summary with :func:`intervals`' columns beside each metric."""
    summary = summary.copy()
    for name in METRICS:
        place = summary.columns.get_loc(name) + 1
        extra = [f"{name}_ci_low", f"{name}_ci_high", f"{name}_ci_note", f"{name}_se"]
        if name in MAXIMA:
            extra[:0] = [f"{name}_crossfit", f"{name}_crossfit_se"]
        for offset, column in enumerate(extra):
            summary.insert(place + offset, column, bounds[column])
    for column in ("units", "subjects", "templates", "df", "cell_units", "subjects_are"):
        summary[column] = bounds[column]
    summary["caution"] = sparse_note(float(bounds["cell_units"])) or ""
    return summary


def subject_strata(scores: pd.DataFrame) -> dict[str, str] | None:
    """Each subject's list (``first_cluster``), where the scores carry it."""
    if "first_cluster" not in scores:
        return None
    return dict(zip(scores["first"].astype(str), scores["first_cluster"].astype(str), strict=True))


def unit_design(
    first: pd.Series, second: pd.Series, template: pd.Series, strata=None, fixed: bool = False
):
    """The crossed design of rows keyed by a subject pair (either order) and a template, and
    each row's unit (its subject pair × template); ``fixed``: the subjects are the population
    asked about."""
    low, high = unordered_pair(first, second)
    keys = pd.DataFrame({"low": low, "high": high, "template": template.to_numpy()})
    unit = keys.groupby(["low", "high", "template"], sort=True).ngroup().to_numpy()
    units = keys.drop_duplicates().sort_values(["low", "high", "template"], ignore_index=True)
    names = sorted(set(units["low"]) | set(units["high"]))
    ids = {name: i for i, name in enumerate(names)}
    kinds = sorted({(strata or {}).get(n, "") for n in names})
    design = Design(
        units["low"].map(ids).to_numpy(),
        units["high"].map(ids).to_numpy(),
        units["template"]
        .astype(str)
        .map({t: i for i, t in enumerate(sorted(units["template"].astype(str).unique()))})
        .to_numpy(),
        np.array([kinds.index((strata or {}).get(n, "")) for n in names]),
        subjects_fixed=fixed,
    )
    return design, unit


def unit_share_interval(rows: pd.DataFrame, column: str, intervals: IntervalSpec):
    """The share of ``column`` (0/1 per row) over rows keyed by first, second and template,
    with its crossed-design interval."""
    fixed = intervals.subjects == "fixed"
    design, unit = unit_design(rows["first"], rows["second"], rows["template"], fixed=fixed)
    level = intervals.level
    hits = np.bincount(unit, rows[column].to_numpy(float), design.units)
    count = np.bincount(unit, minlength=design.units).astype(float)
    return ratio_interval(hits, count, design, level, share=True)


def summary_lines(row) -> pd.DataFrame:
    """UnQover's metrics of one summary row as a reader's table: value (marked where the cells
    are too thin to read the plug-in), cross-fitted value, interval or why there is none, n."""
    thin = sparse_note(float(row.get("cell_units", math.nan))) is not None
    lines = []
    for measure in MEASURES:
        name = measure.column
        low, high = row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
        if low is None:
            interval = "— (intervals off)"
        elif low == low and high == high:
            interval = readable_interval(low, high)
        else:
            interval = f"no interval: {row.get(f'{name}_ci_note') or 'undefined'}"
        value = readable(row[name])
        if thin and name in MAXIMA:
            value += " (sparse)"
        crossfit = row.get(f"{name}_crossfit")
        if mostly_noise(row[name], crossfit):
            value += " (mostly noise)"
        lines.append(
            {
                "metric": measure.symbol,
                "value": value,
                "cross-fitted": readable(crossfit) if crossfit is not None else "",
                "interval": interval,
                "units": row.get("units", "—"),
                "subjects": row.get("subjects", "—"),
                "templates": row.get("templates", "—"),
            }
        )
    return pd.DataFrame(lines)


def gap_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """The gap |μ − desired μ|'s interval from μ's: {|m − d| : m in μ's interval}, which holds
    the true gap whenever μ's holds the true μ. The irrelevant set's desired μ is itself an
    estimate: no interval there."""
    low, high = table["mu_ci_low"].to_numpy(float), table["mu_ci_high"].to_numpy(float)
    desired = table["desired_mu"].to_numpy(float)
    inside = (low <= desired) & (desired <= high)
    gap_low = np.where(inside, 0.0, np.minimum(np.abs(low - desired), np.abs(high - desired)))
    gap_high = np.maximum(np.abs(low - desired), np.abs(high - desired))
    estimated = (table["set"] == "irrelevant").to_numpy()
    note = np.where(
        estimated,
        "the desired μ is itself estimated (μ with no intervention on the same contexts)",
        table["mu_ci_note"].astype(object).where(table["mu_ci_note"].notna(), None),
    )
    table = table.copy()
    table["gap_ci_low"] = np.where(estimated, np.nan, gap_low)
    table["gap_ci_high"] = np.where(estimated, np.nan, gap_high)
    table["gap_ci_note"] = note
    return table
