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

**δ and ε** are ratios of sums: a t interval over the crossed design, given from
:data:`ERRORS_MIN_DF` degrees of freedom (5 templates, and 5 subjects per list where those are
drawn). Their terms are absolute differences of scores, so their template means are
right-skewed, and a t interval over 4 of them (3 df) covered 0.90–0.93 in simulation
(religion's 3 subjects × 4 templates × 50 attributes, two sets of subjects, 1,000 runs each);
at 5 templates 0.92–0.95, at 8 (the standard step) 0.95–0.96
(``tests/statistics/test_unqover_audit_designs.py``). Below that they are refused, not
approximated.

**μ, η and θ4** are means of maxima or of absolute values of cell means: their plug-in value
(the papers' number) is biased upwards wherever a cell's mean is noisy — towards 1 for η when a
cell holds one unit. Their interval is :func:`~.core.bounds_interval`: the lower bound from
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
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from biaslens.methods.qa.intervals.unqover_ceiling import (
    NO_SPREAD,
    agreeing_templates,
    ceiling_interval,
)
from biaslens.methods.qa.intervals.unqover_splits import partner_groups, template_halves
from biaslens.methods.qa.metrics.unqover_cells import (
    UnitCells,
    distinct_rows,
    incomplete_note,
    text_ranks,
)
from biaslens.metrics.intervals.core import (
    Interval,
    IntervalSpec,
    bounds_interval,
    t_interval,
)
from biaslens.metrics.intervals.crossed import Design, crossed_variances
from biaslens.metrics.intervals.grouped import GroupedMean, GroupedStatistic, group_mean, ratio

METRICS = ("mu", "eta", "theta4", "delta", "epsilon")
MAXIMA = ("mu", "eta", "theta4")
ERRORS_MIN_DF = 4
"""The fewest degrees of freedom at which δ and ε get an interval (module docstring)."""


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


PAIRINGS = {4: ((0, 3), (3, 0), (1, 2), (2, 1)), 2: ((0, 1), (1, 0))}
"""(choose on, read on) parts: the quarters of subject cells (partner group × template half,
numbered 2·group + half) paired across both splits; the template halves of pair cells."""


def choices(c, n, starts, kind: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The cross-fit's choices, made once on the whole set (``c``, ``n``: one row per part):
    per pairing of :data:`PAIRINGS`, the cells chosen and the sign each is read with: for
    ``"max"`` each group's cell(s) of largest |mean| in the choosing part, for ``"mean"``
    every cell (η). Only cells present in both parts count; a cell whose choosing mean is 0
    is read with sign 0 (and still counted)."""
    means = [ratio(ci, ni) for ci, ni in zip(c, n, strict=True)]
    out = []
    for a, b in PAIRINGS[len(c)]:
        both = (n[a] > 0) & (n[b] > 0)
        if kind == "max":
            shown = np.where(both, np.abs(means[a]), -np.inf)
            top = np.maximum.reduceat(shown, starts, axis=1)
            sizes = np.diff(np.append(starts, shown.shape[1]))
            chosen = both & (shown == np.repeat(top, sizes, axis=1))
        else:
            chosen = both
        out.append((chosen, np.where(chosen, np.sign(np.nan_to_num(means[a])), 0.0)))
    return out


def _parts(sums, keys):
    return [sums[k] for k in keys]


def _plug_in(kind: str, c_keys, n_keys):
    """The plug-in per group: max over cells of |Σc / Σn| (``"max"``: μ, θ4) or their mean
    (``"mean"``: η), over the cells present."""

    def per_group(sums, fixed, starts):
        n = sum(_parts(sums, n_keys))
        total = np.abs(ratio(sum(_parts(sums, c_keys)), n))
        if kind == "max":
            return _select(total, total, n > 0, starts)
        return group_mean(total, n > 0, starts)

    return per_group


def _crossfit(c_keys, n_keys):
    """The cross-fitted value per group: per pairing, the group's chosen cells read on the other
    part (signed, averaged over the chosen cells still present), averaged over pairings. The
    choices (``fixed``: ``cells{p}``, ``sign{p}``) stay those of the whole set in every deletion
    of the jackknife: the reading is then a smooth function of the sums, whose jackknife is
    consistent (a choice remade in each deletion flips between near-ties and inflates the
    spread, as the double-machine-learning variance also holds the first stage fixed)."""

    def per_group(sums, fixed, starts):
        c, n = _parts(sums, c_keys), _parts(sums, n_keys)
        readings = []
        for p, (_, b) in enumerate(PAIRINGS[len(c)]):
            mean = ratio(c[b], n[b])
            used = fixed[f"cells{p}"].astype(bool) & np.isfinite(mean)
            signed = np.where(used, fixed[f"sign{p}"] * np.nan_to_num(mean), 0.0)
            total = np.add.reduceat(signed, starts, axis=1)
            count = np.add.reduceat(used.astype(float), starts, axis=1)
            readings.append(ratio(total, count))
        return _nan_safe_mean(np.stack(readings))

    return per_group


FAMILIES = {
    "mu": ("max", "c_sum", "n"),
    "eta": ("mean", "sign_sum", "n"),
    "theta4": ("max", "pc_sum", "pn"),
}
"""Each maximum-like metric: its plug-in's kind and the prefixes of its per-part sums."""


def _statistic(totals, subject_starts, pair_starts, parts: int) -> GroupedStatistic:
    """Every metric from per-part sums (``parts``: of the subject cells; the pair cells have
    two): μ, η, θ4 and their cross-fitted values as means over subjects or pairs, with the
    cross-fit's choices (:func:`choices`) made once on the whole set ``totals``; δ, ε as
    ratios."""
    grouped = {}
    for name, (kind, c_prefix, n_prefix) in FAMILIES.items():
        count = 2 if name == "theta4" else parts
        starts = pair_starts if name == "theta4" else subject_starts
        c_keys = tuple(f"{c_prefix}{q}" for q in range(count))
        n_keys = tuple(f"{n_prefix}{q}" for q in range(count))
        chosen = choices(_parts(totals, c_keys), _parts(totals, n_keys), starts, kind)
        fixed = {}
        for p, (cells, sign) in enumerate(chosen):
            fixed[f"cells{p}"], fixed[f"sign{p}"] = cells, sign
        keys = (*c_keys, *n_keys)
        grouped[name] = GroupedMean(keys, starts, _plug_in(kind, c_keys, n_keys))
        grouped[f"{name}_crossfit"] = GroupedMean(keys, starts, _crossfit(c_keys, n_keys), fixed)

    def scalars(s):
        out = {}
        for key in ("delta", "epsilon"):
            total = s[f"{key}_t0"] + s[f"{key}_t1"]
            count = s[f"{key}_n0"] + s[f"{key}_n1"]
            out[key] = np.asarray(ratio(total, count)[:, 0], dtype=float)
        return out

    ratios = tuple(f"{k}_{v}{h}" for k in ("delta", "epsilon") for v in "tn" for h in (0, 1))
    return GroupedStatistic(grouped, scalars, ratios)


def _nan_safe_mean(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=0)


@dataclass
class Prepared:
    """One set's per-unit sums, its statistic and its crossed design, before any deletion."""

    matrices: dict[str, sparse.csr_matrix]
    statistic: GroupedStatistic
    design: Design
    units: list[tuple[str, str, str]]  # (low subject, high subject, template) in row order
    subject_starts: np.ndarray
    pair_starts: np.ndarray
    attributes: int
    subjects: int
    templates: int
    cell_units: float


def prepare(cells: UnitCells, spec: IntervalSpec, strata: dict[str, str] | None) -> Prepared:
    """The sums, statistic and design :func:`intervals` and
    :func:`~.unqover_change.paired_intervals` read."""
    seed, subjects_fixed = spec.seed, spec.subjects == "fixed"
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
    if subjects_fixed:
        part, parts = half_of_unit[unit], 2
    else:
        part, parts = 2 * partner_groups(x1, partner, seed) + half_of_unit[unit], 4
    values = {k: subject[k] for k in ("c_sum", "sign_sum", "n")}
    matrices, subject_starts = _cell_matrices(
        (x1, attribute), place[unit], n_units, values, part, parts
    )
    pair = cells.pair.columns()
    unit = pair["key"][:, 0]
    pair_matrices, pair_starts = _cell_matrices(
        (low[unit], high[unit], attribute_rank[pair["key"][:, 1]]),
        place[unit],
        n_units,
        {"pc_sum": pair["c_sum"], "pn": pair["n"]},
        half_of_unit[unit],
        2,
    )
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
        subjects_fixed=subjects_fixed,
    )
    total = {k: np.asarray(m.sum(axis=0)).reshape(1, -1) for k, m in matrices.items()}
    statistic = _statistic(total, subject_starts, pair_starts, parts)
    template_names = np.asarray(coder.templates.keys, dtype=object)[np.argsort(template_rank)]
    subject_names = np.asarray(coder.subjects.keys, dtype=object)[np.argsort(subject_rank)]
    units = [
        (str(subject_names[a]), str(subject_names[b]), str(template_names[t]))
        for a, b, t in zip(low[unit_order], high[unit_order], template[unit_order], strict=True)
    ]
    return Prepared(
        matrices,
        statistic,
        design,
        units,
        subject_starts,
        pair_starts,
        len(np.unique(attribute_rank)),
        len(names),
        len(templates),
        float(np.median(np.bincount(distinct_rows(x1, attribute)[0]))),
    )


def intervals(
    cells: UnitCells, spec: IntervalSpec, strata: dict[str, str] | None = None
) -> dict[str, float | str | None]:
    """``{metric}_ci_low`` / ``_ci_high`` (NaN with ``{metric}_ci_note`` saying why where
    there is none) for μ, η, θ4, δ, ε; ``{metric}_crossfit`` for μ, η, θ4; ``units`` (subject
    pair × template units), ``subjects``, ``templates`` and ``cell_units`` (the median units
    per (subject, attribute) cell). ``spec``: the level, the seed of the cross-fit's splits,
    and what the subjects are: where they are fixed (the population asked about, templates
    alone drawn: :class:`~.crossed.Design`), the cross-fit splits the templates only (a
    subject's γ averages over the same fixed partners in both parts); with
    ``spec.complete_design``, μ, η and θ4 get no interval where some subject or pair lacks an
    attribute (:func:`incomplete_note`). ``strata``: a subject's list (e.g. female / male
    names)."""
    level = spec.level
    prepared = prepare(cells, spec, strata)
    matrices, design = prepared.matrices, prepared.design
    point, variances = crossed_variances(matrices, prepared.statistic, design)
    out: dict[str, float | str | None] = {}
    incomplete = None
    if spec.complete_design:
        incomplete = incomplete_note(
            np.diff(np.append(prepared.subject_starts, matrices["c_sum0"].shape[1])),
            np.diff(np.append(prepared.pair_starts, matrices["pc_sum0"].shape[1])),
            prepared.attributes,
        )
    for name in METRICS:
        if name in MAXIMA:
            out[f"{name}_crossfit"] = point[f"{name}_crossfit"]
            out[f"{name}_crossfit_se"] = math.sqrt(max(variances[f"{name}_crossfit"], 0.0))
            interval = (
                Interval.none(incomplete)
                if incomplete
                else bounds_interval(
                    point[f"{name}_crossfit"],
                    variances[f"{name}_crossfit"],
                    point[name],
                    variances[name],
                    design.df,
                    level,
                    clip=(0.0, 1.0),
                )
            )
            if not incomplete and design.df >= 1 and not variances[name] > NO_SPREAD:
                if name == "eta" and design.subjects_fixed:  # exact, from agreeing templates
                    found = agreeing_templates(matrices, design, prepared.subject_starts)
                    interval = ceiling_interval(*found, level)
                else:  # never [x, x]
                    interval = Interval.none(
                        "every unit gives the same value: no spread to build an interval on"
                    )
        elif design.df < ERRORS_MIN_DF:
            interval = Interval.none(
                f"{design.df} degree(s) of freedom ({prepared.templates} templates): too few "
                "for a t interval of a mean of absolute differences (their template means are "
                f"skewed); it needs {ERRORS_MIN_DF}: 5 templates (and 5 subjects per list where "
                "they are drawn)"
            )
        else:
            interval = t_interval(point[name], variances[name], design.df, level, (0.0, 1.0))
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = interval.low, interval.high
        out[f"{name}_ci_note"] = interval.why_not
        out[f"{name}_se"] = math.sqrt(max(variances[name], 0.0))
    out["df"] = design.df
    out["subjects_are"] = spec.subjects
    out["units"] = len(prepared.units)
    out["subjects"] = prepared.subjects
    out["templates"] = prepared.templates
    out["cell_units"] = prepared.cell_units
    return out
