"""Two audited models' UnQover or LEI numbers, paired over the probe's units: both models
answered the same contexts (the audit draws them with the same settings and seed), so the
difference of their μ (η, θ4) is one statistic of the crossed design of subject pairs ×
templates the two share, and its jackknife deletes the same unit, subject or template from
both (:func:`~biaslens.methods.qa.intervals.unqover_change.paired_intervals`: the
construction of lei-eval's change of μ, conservative by construction). δ and ε, and the
numbers that are themselves differences (the change of μ, the gap), have no paired interval.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator, paired_change
from biaslens.methods.qa.metrics.unqover_summary import subject_strata
from biaslens.methods.qa.questions import interval_spec
from biaslens.metrics.intervals import LEVEL, IntervalSpec
from biaslens.store.result import RunResult

PAIRED_METRICS = {"lei_mu": ("mu", "eta", "theta4"), "unqover": ("mu", "eta", "theta4")}
"""The headline tables and metrics that have a paired interval between two models."""
UNITS = "subject pair × template units"


def _difference(
    a: pd.DataFrame,
    b: pd.DataFrame,
    within: tuple[str, ...],
    spec: IntervalSpec,
    strata: dict[str, str] | None,
    metric: str,
    skip_unscored: bool = False,
) -> dict:
    found = paired_change(a, b, within, spec, strata, metric, skip_unscored)
    return {
        "difference": found["change"],
        "ci_low": found["change_ci_low"],
        "ci_high": found["change_ci_high"],
        "note": found.get("change_ci_note"),
        "n": found["units"],
        "units": UNITS,
    }


def paired_lei(
    folder_a: Path, folder_b: Path, labels: dict, metric: str, level: float = LEVEL
) -> dict | None:
    """Model A − model B for one lei-eval number of one set (None: no paired interval)."""
    if metric not in PAIRED_METRICS["lei_mu"] or "set" not in labels:
        return None
    runs = [RunResult.load(folder) for folder in (folder_a, folder_b)]
    scores = [run.samples for run in runs]
    strata = subject_strata(scores[0])  # of the whole run, as its table had them
    a, b = (s[s["set"] == labels["set"]] for s in scores)
    spec = interval_spec(runs[0].record.settings, level, complete_design=False)
    return _difference(a, b, ("set", "intervention_id"), spec, strata, metric)


def paired_unqover(
    folder_a: Path, folder_b: Path, labels: dict, metric: str, level: float = LEVEL
) -> dict | None:
    """Model A − model B for one UnQover model-level number (None: no paired interval)."""
    if metric not in PAIRED_METRICS["unqover"] or labels.get("subject"):
        return None
    runs = [RunResult.load(folder) for folder in (folder_a, folder_b)]
    scores = [run.samples for run in runs]
    settings = runs[0].record.settings
    spec = interval_spec(settings, level, complete_design=True)
    skip = settings.get("mode") == "sampled"
    clusters = UnqoverAccumulator((), spec, skip_unscored=skip)
    clusters.add(scores[0])
    return _difference(scores[0], scores[1], (), spec, clusters.clusters, metric, skip)
