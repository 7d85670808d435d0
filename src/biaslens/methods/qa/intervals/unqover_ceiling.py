"""η where its template jackknife has no spread (:func:`.unqover.intervals`, subjects fixed):
an exact bound from the templates that agree, instead of no interval."""

from __future__ import annotations

import numpy as np
from scipy import stats

from biaslens.metrics.intervals.core import Interval
from biaslens.metrics.intervals.crossed import Design
from biaslens.metrics.intervals.grouped import group_mean, ratio

NO_SPREAD = 1e-18
"""A jackknife variance this small is rounding, not spread: every deletion gives the same
value (η's signs that agree in every template, or whose changes cancel between a pair's two
subjects)."""


def agreeing_templates(
    matrices: dict, design: Design, subject_starts: np.ndarray
) -> tuple[int, int, float]:
    """For η where its jackknife has no spread: how many templates agree, of how many, and η
    read from the agreeing values.

    At a template τ, each (subject x, attribute a) cell has its mean sign of C over x's
    partners, m(x, a, τ); its modal value over the templates is m(x, a). A template agrees when
    every cell's m(x, a, τ) is its modal value; η read from the modal values is the mean over
    subjects of the mean over attributes of |m(x, a)| (the plug-in where every template
    agrees)."""
    parts = sum(1 for k in matrices if k.startswith("sign_sum"))
    signs = sum(matrices[f"sign_sum{h}"] for h in range(parts)).tocoo()
    counts = sum(matrices[f"n{h}"] for h in range(parts)).tocsr()
    n = np.asarray(counts[signs.row, signs.col]).ravel()
    template = design.template[signs.row]
    key, group = np.unique(np.stack([template, signs.col]), axis=1, return_inverse=True)
    group = group.ravel()
    sums = np.bincount(group, weights=signs.data), np.bincount(group, weights=n)
    mean = np.round(ratio(*sums), 9)
    modal = np.full(counts.shape[1], np.nan)
    for cell in np.unique(key[1]):
        values, times = np.unique(mean[key[1] == cell], return_counts=True)
        modal[cell] = values[np.argmax(times)]
    disagreeing = np.unique(key[0][mean != modal[key[1]]])
    templates = len(np.unique(design.template))
    present = np.isfinite(modal)[None, :]
    eta = group_mean(np.abs(np.nan_to_num(modal))[None, :], present, subject_starts)
    return templates - len(disagreeing), templates, float(np.nanmean(eta))


def ceiling_interval(agreeing: int, templates: int, eta: float, level: float) -> Interval:
    """η's interval where its jackknife has no spread, with the subjects fixed and the
    templates drawn: if a template agrees (:func:`agreeing_templates`) with probability r,
    each cell's mean sign over the population of templates is within 2(1 − r) of its modal
    value, and so is η of the η read from the modal values (|·| and means move it no further).
    r's exact one-sided lower bound at ``level`` from the agreeing templates (Clopper–Pearson:
    (1 − level)^(1/T) where all T agree) gives both bounds at once: the interval covers at
    least ``level``. Where all agree at η near 1 this is the bound a strong, consistent bias
    gets (at 6 templates, η ≥ 0.21; at 14, ≥ 0.61)."""
    alpha = 1 - level
    low_r = float(stats.beta.ppf(alpha, agreeing, templates - agreeing + 1)) if agreeing else 0.0
    slack = 2 * (1 - low_r)
    return Interval(max(0.0, eta - slack), min(1.0, eta + slack), conservative=True)
