"""The paired change of UnQover's μ between two sets on the same units (LEI's μ under an
intervention − μ with none, over the same contexts), over the crossed design they share."""

from __future__ import annotations

import math

import numpy as np

from biaslens.methods.qa.intervals.unqover import prepare
from biaslens.methods.qa.metrics.unqover_cells import UnitCells
from biaslens.metrics.intervals.core import IntervalSpec, t_quantile
from biaslens.metrics.intervals.crossed import crossed_variances
from biaslens.metrics.intervals.grouped import GroupedStatistic


class _Paired:
    """Two sets' statistics on the same units, as one statistic of the crossed design: each
    deletion removes the same unit, subject or template from both, so the spread of their
    difference counts what the two share. Sums are told apart by the prefixes ``a:`` and
    ``b:``; the change's bounds read μ's cross-fitted and plug-in values crosswise."""

    def __init__(self, first: GroupedStatistic, second: GroupedStatistic, metric: str) -> None:
        self.first, self.second, self.metric = first, second, metric
        self._split: tuple[dict, tuple[dict, dict]] | None = None

    def _parts(self, sums: dict) -> tuple[dict, dict]:
        if self._split is not None and self._split[0] is sums:  # the whole set's, kept
            return self._split[1]
        parts = tuple({k[2:]: v for k, v in sums.items() if k[:2] == p} for p in ("a:", "b:"))
        if next(iter(sums.values())).shape[0] == 1:
            self._split = (sums, parts)
        return parts

    def _combine(self, a: dict, b: dict) -> dict[str, np.ndarray]:
        m, fit = self.metric, f"{self.metric}_crossfit"
        return {
            "first": a[m],
            "second": b[m],
            "change": a[m] - b[m],
            "low": a[fit] - b[m],
            "high": a[m] - b[fit],
        }

    def __call__(self, sums: dict) -> dict[str, np.ndarray]:
        a, b = self._parts(sums)
        return self._combine(self.first(a), self.second(b))

    def deleted(self, totals: dict, removed: dict) -> dict[str, np.ndarray]:
        (a, b), (ra, rb) = self._parts(totals), self._parts(removed)
        return self._combine(self.first.deleted(a, ra), self.second.deleted(b, rb))


def paired_intervals(
    first: UnitCells,
    second: UnitCells,
    spec: IntervalSpec,
    strata: dict[str, str] | None = None,
    metric: str = "mu",
) -> dict[str, float | str | None]:
    """The change of μ (or η, θ4) from the set ``second`` to the set ``first`` on the same
    subject pair × template units (LEI's μ under an intervention − μ with none, over the same
    contexts): ``first`` and ``second`` (each set's plug-in), ``change`` (their difference),
    ``change_ci_low`` / ``_ci_high`` and ``change_ci_note`` (why there is none).

    The bounds follow :func:`~.core.bounds_interval` crosswise: the cross-fitted value lies
    below the metric in expectation and the plug-in above it, so (cross-fitted first − plug-in
    second) lies below the change and (plug-in first − cross-fitted second) above it; each is a
    one-sided t bound at (1 + level)/2 with the crossed-design jackknife of that difference,
    whose deletions take the same unit, subject or template from both sets (paired: what the
    sets share cancels). Conservative by construction. Sets that do not hold the same units
    (some contexts scored in one set only) get no interval."""
    a, b = prepare(first, spec, strata), prepare(second, spec, strata)
    out: dict[str, float | str | None] = {"units": len(a.units), "df": a.design.df}
    if a.units != b.units:
        out.update(change=math.nan, change_ci_low=math.nan, change_ci_high=math.nan)
        out["change_ci_note"] = (
            f"the sets hold different subject pair × template units ({len(a.units)} and "
            f"{len(b.units)}): a paired change needs the same contexts in both"
        )
        return out
    matrices = {f"a:{k}": v for k, v in a.matrices.items()}
    matrices.update({f"b:{k}": v for k, v in b.matrices.items()})
    point, variances = crossed_variances(
        matrices, _Paired(a.statistic, b.statistic, metric), a.design
    )
    t = t_quantile(spec.level, a.design.df) if a.design.df >= 1 else math.nan
    low = point["low"] - t * math.sqrt(max(variances["low"], 0.0))
    high = point["high"] + t * math.sqrt(max(variances["high"], 0.0))
    out.update(first=point["first"], second=point["second"], change=point["change"])
    why = None
    if a.design.df < 1:
        why = "one subject or template only: nothing to tell the spread from"
    elif not math.isfinite(point["change"]) or not math.isfinite(variances["high"]):
        why = "the change or its spread is undefined"
    if why:
        out.update(change_ci_low=math.nan, change_ci_high=math.nan, change_ci_note=why)
        return out
    # a cross-fit too small to compute leaves its side at the change's floor or ceiling
    out["change_ci_low"] = max(-1.0, low) if math.isfinite(low) else -1.0
    out["change_ci_high"] = min(1.0, high) if math.isfinite(high) else 1.0
    out["change_ci_note"] = None
    return out
