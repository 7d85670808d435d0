"""Intervals of UnQover's μ, η, θ4, δ and ε over the crossed design of subjects × templates.

**What they estimate.** The model's behaviour over templates and subjects like these: both are
draws (:mod:`.crossed`). μ is the mean over subjects of max over attributes of |γ(x, a)|, with
γ(x, a) the mean of C over the population of templates and partner subjects; η, θ4 likewise;
δ and ε are means of per-context terms over that population.

**The unit** is a subject pair × template: all of its attributes, both orders, both questions
and (LEI) every intervention sentence stay together, so that every deletion leaves a set the
metrics are defined on. Per unit, the sums the metrics are made of are kept (Σ C, Σ sign(C) and
n per (subject, attribute) and per (pair, attribute); Σ and n of the δ and ε terms), split for
cross-fitting (below).

**δ and ε** are ratios of sums: a t interval over the crossed design.

**μ, η and θ4** are means of maxima or of absolute values of cell means: their plug-in value
(the papers' number) is biased upwards wherever a cell's mean is noisy — towards 1 for η when a
cell holds one unit. Their interval is :func:`~.crossed.bounds_interval`: the lower bound from
the **cross-fitted** value, the upper bound from the plug-in. Cross-fitting chooses each
subject's attribute and sign on one part of the data and reads its γ on another part that
shares neither templates nor partner subjects with the first (γ(x, a) averages over both, so a
part that shared either would carry the same noise into the reading): templates are dealt into
two halves and each subject's partners into two groups, the four quarters are paired across
both splits (group 1 × half 1 with group 2 × half 2, group 1 × half 2 with group 2 × half 1),
each pair read both
ways, and the readings averaged. θ4's cells are subject pairs, whose γ averages over templates
only: its halves are the templates'. It covers at least its level by construction; the cross-fitted
value is reported beside the plug-in (``{metric}_crossfit``): where the two differ much, the
plug-in is mostly noise. A lower bound above 0 rejects "no bias" at (1 − level)/2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse

from biaslens.metrics.crossed import Design, crossed_variances
from biaslens.metrics.intervals import bounds_interval, t_interval
from biaslens.metrics.unqover_cells import UnitCells, distinct_rows, text_ranks

METRICS = ("mu", "eta", "theta4", "delta", "epsilon")
MAXIMA = ("mu", "eta", "theta4")


def template_halves(template: np.ndarray, attribute: np.ndarray, seed: int) -> dict[int, int]:
    """Each template's half (0 or 1) for cross-fitting: templates that ask the same attributes
    are shuffled (seeded) and dealt alternately, so that each attribute is asked in both halves
    where it has two templates or more. ``template``, ``attribute``: ranks
    (:func:`~.unqover_cells.text_ranks`) of the pairs asked; groups and their members are taken
    in that order, so the halves depend on the seed alone."""
    _, (templates, attributes) = distinct_rows(template, attribute)
    starts = np.flatnonzero(np.r_[True, templates[1:] != templates[:-1]])
    groups: dict[tuple, list[int]] = {}
    for members in np.split(np.arange(len(templates)), starts[1:]):
        groups.setdefault(tuple(attributes[members]), []).append(int(templates[members[0]]))
    rng = np.random.default_rng(seed)
    half, turn = {}, 0
    for signature in sorted(groups):
        order = groups[signature]
        rng.shuffle(order)
        for member in order:
            half[member] = turn % 2
            turn += 1
    return half


def partner_groups(subject: np.ndarray, partner: np.ndarray, seed: int) -> np.ndarray:
    """Each (subject, partner) row's partner group (0 or 1) for cross-fitting: every subject's
    partners shuffled (seeded) and dealt alternately, so each subject with two partners or
    more has some in both groups. ``subject``, ``partner``: ranks
    (:func:`~.unqover_cells.text_ranks`)."""
    number, (x, _) = distinct_rows(subject, partner)
    key = np.random.default_rng([seed, 1]).random(len(x))
    order = np.lexsort((key, x))
    first_of_subject = np.r_[True, x[order][1:] != x[order][:-1]]
    start = np.maximum.accumulate(np.where(first_of_subject, np.arange(len(order)), 0))
    group = np.empty(len(order), dtype=np.int64)
    group[order] = (np.arange(len(order)) - start) % 2
    return group[number]


def _cell_matrices(cells, unit, n_units, values, part_of_row, parts):
    """Per value and part (``parts`` of them), a sparse (units × cells) matrix; ``cells``: the
    rank columns naming a row's cell, the last the attribute (cells sorted by them); and where
    each group's (all columns but the last) cells start."""
    column, distinct = distinct_rows(*cells)
    group = np.zeros(len(distinct[0]), dtype=bool)
    group[0] = True
    for key in distinct[:-1]:
        group[1:] |= key[1:] != key[:-1]
    out = {}
    for name, data in values.items():
        for h in range(parts):
            keep = part_of_row == h
            out[f"{name}{h}"] = sparse.csr_matrix(
                (data[keep], (unit[keep], column[keep])), shape=(n_units, len(distinct[0]))
            )
    return out, np.flatnonzero(group)


def _select(score, value, present, starts):
    """Per row and group: ``value`` at the present cell of largest ``score`` (ties averaged);
    NaN where the group has no present cell."""
    shown = np.where(present, score, -np.inf)
    top = np.maximum.reduceat(shown, starts, axis=1)
    sizes = np.diff(np.append(starts, shown.shape[1]))
    at_top = present & (shown == np.repeat(top, sizes, axis=1))
    hits = np.add.reduceat(at_top.astype(float), starts, axis=1)
    total = np.add.reduceat(np.where(at_top, value, 0.0), starts, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(hits > 0, total / hits, np.nan)


def _group_mean(value, present, starts):
    """Per row and group: the mean of ``value`` over present cells (NaN: none)."""
    count = np.add.reduceat(present.astype(float), starts, axis=1)
    total = np.add.reduceat(np.where(present, value, 0.0), starts, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def _mean_over_groups(per_group):
    """Per row: the mean over the groups that have a value (NaN: none)."""
    with np.errstate(invalid="ignore"):
        reached = np.isfinite(per_group)
        count = reached.sum(axis=1)
        total = np.where(reached, per_group, 0.0).sum(axis=1)
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _ratio(a, b):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)


PAIRINGS = {4: ((0, 3), (3, 0), (1, 2), (2, 1)), 2: ((0, 1), (1, 0))}
"""(choose on, read on) parts: the quarters of subject cells (partner group × template half,
numbered 2·group + half) paired across both splits; the template halves of pair cells."""


def _max_and_crossfit(c, n, starts):
    """The plug-in mean over groups of max over cells of |c/n| (``c``, ``n``: per part), and
    its cross-fitted value (:data:`PAIRINGS`)."""
    total = _ratio(sum(c), sum(n))
    plug = _mean_over_groups(_select(np.abs(total), np.abs(total), sum(n) > 0, starts))
    means = [_ratio(ci, ni) for ci, ni in zip(c, n, strict=True)]
    readings = [
        _select(np.abs(means[a]), np.sign(means[a]) * means[b], (n[a] > 0) & (n[b] > 0), starts)
        for a, b in PAIRINGS[len(c)]
    ]
    return plug, _mean_over_groups(_nan_safe_mean(np.stack(readings)))


def _abs_mean_and_crossfit(c, n, starts):
    """η's plug-in mean over groups of the mean over cells of |c/n|, and its cross-fitted
    value: sign on one part times the value on the other (:data:`PAIRINGS`)."""
    total = _ratio(sum(c), sum(n))
    plug = _mean_over_groups(_group_mean(np.abs(total), sum(n) > 0, starts))
    means = [_ratio(ci, ni) for ci, ni in zip(c, n, strict=True)]
    readings = []
    for a, b in PAIRINGS[len(c)]:
        both = (n[a] > 0) & (n[b] > 0)
        readings.append(_group_mean(np.sign(means[a]) * means[b], both, starts))
    return plug, _mean_over_groups(_nan_safe_mean(np.stack(readings)))


def _statistic(subject_starts, pair_starts):
    def statistic(s):
        out = {}
        quarters = range(4)
        c, n = [s[f"c_sum{q}"] for q in quarters], [s[f"n{q}"] for q in quarters]
        out["mu"], out["mu_crossfit"] = _max_and_crossfit(c, n, subject_starts)
        signs = [s[f"sign_sum{q}"] for q in quarters]
        out["eta"], out["eta_crossfit"] = _abs_mean_and_crossfit(signs, n, subject_starts)
        out["theta4"], out["theta4_crossfit"] = _max_and_crossfit(
            [s["pc_sum0"], s["pc_sum1"]], [s["pn0"], s["pn1"]], pair_starts
        )
        for key in ("delta", "epsilon"):
            total = s[f"{key}_t0"] + s[f"{key}_t1"]
            count = s[f"{key}_n0"] + s[f"{key}_n1"]
            out[key] = _ratio(total, count)[:, 0]
        with np.errstate(invalid="ignore"):
            return {k: np.asarray(v, dtype=float) for k, v in out.items()}

    return statistic


def _nan_safe_mean(values):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=0)


def intervals(
    cells: UnitCells, level: float, seed: int, strata: dict[str, str] | None = None
) -> dict[str, float | str | None]:
    """``{metric}_ci_low`` / ``_ci_high`` (NaN with ``{metric}_ci_note`` saying why where
    there is none) for μ, η, θ4, δ, ε; ``{metric}_crossfit`` for μ, η, θ4; ``units`` (subject
    pair × template units), ``subjects``, ``templates`` and ``cell_units`` (the median units
    per (subject, attribute) cell). ``strata``: a subject's list (e.g. female / male names)."""
    coder = cells.coder
    subject_rank = text_ranks(coder.subjects.keys)
    template_rank = text_ranks(coder.templates.keys)
    attribute_rank = text_ranks(coder.attributes.keys)
    ids = cells.unit_keys()
    low, high = subject_rank[ids[:, 0]], subject_rank[ids[:, 1]]
    template = template_rank[ids[:, 2]]
    n_units = len(ids)
    unit_order = np.lexsort((template, high, low))
    place = np.empty(n_units, dtype=np.int64)
    place[unit_order] = np.arange(n_units)

    subject = cells.subject.columns()
    unit = subject["key"][:, 0]
    on_high = subject["key"][:, 1] == 1
    x1, partner = np.where(on_high, high[unit], low[unit]), np.where(on_high, low[unit], high[unit])
    attribute = attribute_rank[subject["key"][:, 2]]
    halves = template_halves(template[unit], attribute, seed)
    half_of_unit = np.array([halves[t] for t in template])
    quarter = 2 * partner_groups(x1, partner, seed) + half_of_unit[unit]
    values = {k: subject[k] for k in ("c_sum", "sign_sum", "n")}
    matrices, subject_starts = _cell_matrices(
        (x1, attribute), place[unit], n_units, values, quarter, 4
    )
    pair = cells.pair.columns()
    unit = pair["key"][:, 0]
    pair_matrices, pair_starts = _cell_matrices(
        (low[unit], high[unit], attribute_rank[pair["key"][:, 1]]), place[unit], n_units,
        {"pc_sum": pair["c_sum"], "pn": pair["n"]}, half_of_unit[unit], 2,
    )  # fmt: skip
    matrices.update(pair_matrices)
    for key, name in (("d", "delta"), ("e", "epsilon")):
        terms = cells.terms[key].columns()
        unit = terms["key"][:, 0]
        for h in (0, 1):
            keep = half_of_unit[unit] == h
            for value, suffix in (("t_sum", "t"), ("n", "n")):
                matrices[f"{name}_{suffix}{h}"] = sparse.csr_matrix(
                    (terms[value][keep], (place[unit[keep]], np.zeros(keep.sum(), dtype=int))),
                    shape=(n_units, 1),
                )

    subjects = np.unique(np.concatenate([low, high]))  # ranks of the subjects present
    names = [
        str(n)
        for n in np.asarray(coder.subjects.keys, dtype=object)[np.argsort(subject_rank)][subjects]
    ]
    templates = np.unique(template)
    stratum_of = [str((strata or {}).get(n, "")) for n in names]
    stratum_names = sorted(set(stratum_of))
    design = Design(
        np.searchsorted(subjects, low[unit_order]),
        np.searchsorted(subjects, high[unit_order]),
        np.searchsorted(templates, template[unit_order]),
        np.array([stratum_names.index(s) for s in stratum_of]),
    )
    point, variances = crossed_variances(matrices, _statistic(subject_starts, pair_starts), design)
    out: dict[str, float | str | None] = {}
    for name in METRICS:
        if name in MAXIMA:
            interval = bounds_interval(
                point[f"{name}_crossfit"],
                variances[f"{name}_crossfit"],
                point[name],
                variances[name],
                design.df,
                level,
                clip=(0.0, 1.0),
            )
            out[f"{name}_crossfit"] = point[f"{name}_crossfit"]
            out[f"{name}_crossfit_se"] = math.sqrt(max(variances[f"{name}_crossfit"], 0.0))
        else:
            interval = t_interval(point[name], variances[name], design.df, level, (0.0, 1.0))
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = interval.low, interval.high
        out[f"{name}_ci_note"] = interval.why_not
        out[f"{name}_se"] = math.sqrt(max(variances[name], 0.0))
    out["df"] = design.df
    out["units"] = n_units
    out["subjects"] = len(names)
    out["templates"] = len(templates)
    out["cell_units"] = float(np.median(np.bincount(distinct_rows(x1, attribute)[0])))
    return out
