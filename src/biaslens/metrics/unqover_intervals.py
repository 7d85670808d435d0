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
import pandas as pd
from scipy import sparse

from biaslens.metrics.crossed import Design, crossed_variances
from biaslens.metrics.intervals import bounds_interval, t_interval
from biaslens.metrics.unqover import unordered_pair

UNIT = ["low", "high", "template"]
METRICS = ("mu", "eta", "theta4", "delta", "epsilon")
MAXIMA = ("mu", "eta", "theta4")


def _with_unit(table: pd.DataFrame, first: str, second: str) -> pd.DataFrame:
    low, high = unordered_pair(table[first], table[second])
    return table.assign(low=low, high=high)


class UnitSums:
    """The per-unit sums of a set, added chunk by chunk (a unit may span chunks)."""

    def __init__(self) -> None:
        self._parts: dict[str, list[pd.DataFrame]] = {k: [] for k in ("subject", "pair", "d", "e")}

    def add(self, comparative: pd.DataFrame, delta: pd.DataFrame, epsilon: pd.DataFrame) -> None:
        """One chunk: :func:`~.unqover.comparative_scores`, :func:`~.unqover.positional_terms`
        and :func:`~.unqover.attributive_terms` of the same rows."""
        table = _with_unit(comparative, "x1", "x2").assign(sign=np.sign(comparative["C"]))
        self._parts["subject"].append(
            table.groupby([*UNIT, "x1", "attribute"], sort=False)
            .agg(c_sum=("C", "sum"), sign_sum=("sign", "sum"), n=("C", "size"))
            .reset_index()
        )
        one_order = table[(table["x1"].astype(str) == table["low"]).to_numpy()]
        self._parts["pair"].append(
            one_order.groupby([*UNIT, "attribute"], sort=False)
            .agg(c_sum=("C", "sum"), n=("C", "size"))
            .reset_index()
        )
        for key, terms in (("d", delta), ("e", epsilon)):
            part = _with_unit(terms, "first", "second")
            self._parts[key].append(
                part.groupby(UNIT, sort=False).agg(t_sum=("term", "sum"), n=("term", "size"))
                .reset_index()
            )  # fmt: skip

    def tables(self) -> dict[str, pd.DataFrame]:
        keys = {"subject": [*UNIT, "x1", "attribute"], "pair": [*UNIT, "attribute"]}
        out = {}
        for name, parts in self._parts.items():
            table = pd.concat(parts, ignore_index=True)
            out[name] = table.groupby(keys.get(name, UNIT), sort=True).sum().reset_index()
        return out


def template_halves(templates: pd.Series, attributes: pd.Series, seed: int) -> dict:
    """Each template's half (0 or 1) for cross-fitting: templates that ask the same attributes
    are shuffled (seeded) and dealt alternately, so that each attribute is asked in both halves
    where it has two templates or more."""
    asked = pd.DataFrame({"template": templates, "attribute": attributes}).drop_duplicates()
    signature = asked.groupby("template")["attribute"].agg(lambda a: hash(frozenset(a)))
    rng = np.random.default_rng(seed)
    half, turn = {}, 0
    for _, members in signature.groupby(signature, sort=True):
        order = list(members.index)
        rng.shuffle(order)
        for template in order:
            half[template] = turn % 2
            turn += 1
    return half


def _cell_matrices(table, group, unit_of, n_units, values, part_of_row, parts):
    """Per value and part (``parts`` of them), a sparse (units × cells) matrix; cells sorted by
    ``group`` + attribute; and where each group's cells start. A row whose part is −1 is in
    none."""
    keys = table[[*group, "attribute"]]
    cells = keys.drop_duplicates().sort_values([*group, "attribute"], ignore_index=True)
    column = pd.MultiIndex.from_frame(cells).get_indexer(pd.MultiIndex.from_frame(keys))
    starts = np.flatnonzero(~cells[group].duplicated().to_numpy())
    rows = unit_of
    out = {}
    for value in values:
        data = table[value].to_numpy(float)
        for h in range(parts):
            keep = part_of_row == h
            out[f"{value}{h}"] = sparse.csr_matrix(
                (data[keep], (rows[keep], column[keep])), shape=(n_units, len(cells))
            )
    return out, starts


def partner_groups(subject: pd.Series, partner: pd.Series, seed: int) -> np.ndarray:
    """Each (subject, partner) row's partner group (0 or 1) for cross-fitting: every subject's
    partners shuffled (seeded) and dealt alternately, so each subject with two partners or
    more has some in both groups."""
    pairs = pd.DataFrame({"x": subject.to_numpy(), "p": partner.to_numpy()})
    distinct = pairs.drop_duplicates().sort_values(["x", "p"], ignore_index=True)
    rng = np.random.default_rng([seed, 1])
    distinct["key"] = rng.random(len(distinct))
    distinct = distinct.sort_values(["x", "key"], ignore_index=True)
    distinct["group"] = distinct.groupby("x").cumcount() % 2
    return pairs.merge(distinct[["x", "p", "group"]], on=["x", "p"], how="left")["group"].to_numpy()


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
    sums: UnitSums, level: float, seed: int, strata: dict[str, str] | None = None
) -> dict[str, float | str | None]:
    """``{metric}_ci_low`` / ``_ci_high`` (NaN with ``{metric}_ci_note`` saying why where
    there is none) for μ, η, θ4, δ, ε; ``{metric}_crossfit`` for μ, η, θ4; ``units`` (subject
    pair × template units), ``subjects``, ``templates`` and ``cell_units`` (the median units
    per (subject, attribute) cell). ``strata``: a subject's list (e.g. female / male names)."""
    tables = sums.tables()
    every = pd.concat([t[UNIT] for t in tables.values()], ignore_index=True).drop_duplicates()
    every = every.sort_values(UNIT, ignore_index=True)
    units = pd.MultiIndex.from_frame(every)
    unit_of = {
        name: units.get_indexer(pd.MultiIndex.from_frame(t[UNIT])) for name, t in tables.items()
    }
    n_units = len(units)
    subject = tables["subject"]
    halves = template_halves(subject["template"], subject["attribute"], seed)
    half_of_unit = every["template"].map(halves).to_numpy()
    names = sorted(set(every["low"]) | set(every["high"]), key=str)
    partner = subject["high"].where(subject["x1"] == subject["low"], subject["low"])
    groups = partner_groups(subject["x1"], partner, seed)
    quarter = 2 * groups + subject["template"].map(halves).to_numpy()
    matrices, subject_starts = _cell_matrices(
        subject, ["x1"], unit_of["subject"], n_units, ("c_sum", "sign_sum", "n"), quarter, 4
    )
    pair = tables["pair"].rename(columns={"c_sum": "pc_sum", "n": "pn"})
    pair_matrices, pair_starts = _cell_matrices(
        pair, ["low", "high"], unit_of["pair"], n_units, ("pc_sum", "pn"),
        half_of_unit[unit_of["pair"]], 2,
    )  # fmt: skip
    matrices.update(pair_matrices)
    for key, name in (("d", "delta"), ("e", "epsilon")):
        rows = unit_of[key]
        for h in (0, 1):
            keep = half_of_unit[rows] == h
            for value, suffix in (("t_sum", "t"), ("n", "n")):
                data = tables[key][value].to_numpy(float)[keep]
                matrices[f"{name}_{suffix}{h}"] = sparse.csr_matrix(
                    (data, (rows[keep], np.zeros(keep.sum(), dtype=int))), shape=(n_units, 1)
                )

    subject_id = {name: i for i, name in enumerate(names)}
    template_id = {t: i for i, t in enumerate(sorted(every["template"].unique(), key=str))}
    stratum_names = sorted({str((strata or {}).get(n, "")) for n in names})
    design = Design(
        every["low"].map(subject_id).to_numpy(),
        every["high"].map(subject_id).to_numpy(),
        every["template"].map(template_id).to_numpy(),
        np.array([stratum_names.index(str((strata or {}).get(n, ""))) for n in names]),
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
    per_cell = subject.groupby(["x1", "attribute"]).size()
    out["df"] = design.df
    out["units"] = n_units
    out["subjects"] = len(names)
    out["templates"] = len(template_id)
    out["cell_units"] = float(per_cell.median())
    return out


def intervals_by(
    scores: pd.DataFrame,
    comparative: pd.DataFrame,
    by: str,
    within: tuple[str, ...],
    level: float,
    seed: int,
    strata: dict[str, str] | None = None,
) -> pd.DataFrame:
    """:func:`intervals` of each value of ``by`` (e.g. LEI's set), one row each.

    ``comparative``: :func:`~.unqover.comparative_scores` of ``scores`` keyed by ``by`` and
    ``within``."""
    from biaslens.metrics.unqover import attributive_terms, positional_terms

    keys = (by, *within)
    rows = []
    for value, part in scores.groupby(by, sort=True):
        sums = UnitSums()
        sums.add(
            comparative[(comparative[by] == value).to_numpy()],
            positional_terms(part, keys),
            attributive_terms(part, keys),
        )
        rows.append({by: value, **intervals(sums, level, seed, strata)})
    return pd.DataFrame(rows)
