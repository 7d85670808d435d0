"""Bootstrap intervals of UnQover's μ, η, θ4, δ and ε over the unit the set samples.

UnQover's contexts are drawn as (template, subject pair, attribute) examples, and the metrics
pair every context with its other subject order and its negated question (the position and
negation corrections). The unit resampled is therefore a **subject pair × template**: all of
its attributes, both orders, both questions and (LEI) every intervention sentence stay
together, so each replicate is a set the metrics are defined on. Per unit, the sums the metrics
are made of (:mod:`.unqover_stream`) are kept: Σ C, Σ sign(C) and n per (subject, attribute),
Σ C and n per (pair, attribute), Σ and n of the δ and ε terms; a replicate weighs the units by
how often they were drawn (:mod:`.bootstrap`; units numbered in sorted order of (pair,
template)) and computes μ, η, θ4, δ, ε exactly as
:func:`~.unqover.model_summary` does on the resampled set.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse

from biaslens.metrics.bootstrap import percentile_interval, weight_batches
from biaslens.metrics.unqover import unordered_pair

UNIT = ["low", "high", "template"]
METRICS = ("mu", "eta", "theta4", "delta", "epsilon")


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


def _unit_index(tables: dict[str, pd.DataFrame]) -> tuple[dict[str, np.ndarray], int]:
    every = pd.concat([t[UNIT] for t in tables.values()], ignore_index=True).drop_duplicates()
    every = every.sort_values(UNIT, ignore_index=True)  # unit i: the i-th in sorted order
    units = pd.MultiIndex.from_frame(every)
    index = {
        name: units.get_indexer(pd.MultiIndex.from_frame(t[UNIT])) for name, t in tables.items()
    }
    return index, len(units)


def _cells(table: pd.DataFrame, group: list[str], rows: np.ndarray, n_units: int):
    """Sparse (units × cells) matrices of the sums, cells sorted by ``group`` + attribute, and
    where each group's cells start."""
    cell_keys = table[[*group, "attribute"]]
    cells = cell_keys.drop_duplicates().sort_values([*group, "attribute"], ignore_index=True)
    cell_of = cells.reset_index().merge(
        cell_keys.reset_index(names="row"), on=[*group, "attribute"]
    )
    column = np.empty(len(table), dtype=np.int64)
    column[cell_of["row"].to_numpy()] = cell_of["index"].to_numpy()
    starts = np.flatnonzero(~cells[group].duplicated().to_numpy())

    def matrix(values: str):
        shape = (n_units, len(cells))
        return sparse.csr_matrix((table[values].to_numpy(float), (rows, column)), shape=shape)

    return matrix, starts, len(cells)


def _mean_of_group_max(values: np.ndarray, present: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per replicate: mean over groups reached of the max over their present cells."""
    shown = np.where(present, values, -1.0)  # values are |·| >= 0: -1 marks an absent cell
    top = np.maximum.reduceat(shown, starts, axis=1)
    reached = top >= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(reached, top, 0).sum(axis=1) / reached.sum(axis=1)


def intervals(sums: UnitSums, replicates: int, level: float, seed: int) -> dict[str, float]:
    """``{metric}_ci_low`` / ``_ci_high`` for μ, η, θ4, δ, ε and ``units``: the number of
    subject pair × template units resampled."""
    tables = sums.tables()
    index, n_units = _unit_index(tables)
    subject, subject_starts, subject_cells = _cells(
        tables["subject"], ["x1"], index["subject"], n_units
    )
    pair, pair_starts, pair_cells = _cells(tables["pair"], UNIT[:2], index["pair"], n_units)
    c, s, n = subject("c_sum"), subject("sign_sum"), subject("n")
    pc, pn = pair("c_sum"), pair("n")
    scalar = {
        key: (
            np.bincount(index[key], tables[key]["t_sum"].to_numpy(float), n_units),
            np.bincount(index[key], tables[key]["n"].to_numpy(float), n_units),
        )
        for key in ("d", "e")
    }
    values: dict[str, list[np.ndarray]] = {m: [] for m in METRICS}
    cells = max(subject_cells, pair_cells)
    for weights in weight_batches(n_units, replicates, seed, cells):
        counts = (n.T @ weights.T).T
        present = counts > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            gamma = np.abs((c.T @ weights.T).T / counts)
            eta = np.abs((s.T @ weights.T).T / counts)
            pair_counts = (pn.T @ weights.T).T
            pair_mean = np.abs((pc.T @ weights.T).T / pair_counts)
        values["mu"].append(_mean_of_group_max(gamma, present, subject_starts))
        attributes = np.add.reduceat(present.astype(float), subject_starts, axis=1)
        eta_sum = np.add.reduceat(np.where(present, eta, 0.0), subject_starts, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_subject = eta_sum / attributes
            reached = attributes > 0
            values["eta"].append(np.where(reached, per_subject, 0).sum(1) / reached.sum(1))
        values["theta4"].append(_mean_of_group_max(pair_mean, pair_counts > 0, pair_starts))
        for key, name in (("d", "delta"), ("e", "epsilon")):
            total, count = scalar[key]
            with np.errstate(invalid="ignore", divide="ignore"):
                values[name].append((weights @ total) / (weights @ count))
    out: dict[str, float] = {}
    for name in METRICS:
        low, high = percentile_interval(np.concatenate(values[name]), level)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = float(low), float(high)
    out["units"] = n_units
    return out


def intervals_by(
    scores: pd.DataFrame,
    comparative: pd.DataFrame,
    by: str,
    within: tuple[str, ...],
    bootstrap: tuple[int, float, int],
) -> pd.DataFrame:
    """:func:`intervals` of each value of ``by`` (e.g. LEI's set), one row each.

    ``comparative``: :func:`~.unqover.comparative_scores` of ``scores`` keyed by ``by`` and
    ``within``; every value of ``by`` is resampled on its own with the same seed."""
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
        rows.append({by: value, **intervals(sums, *bootstrap)})
    return pd.DataFrame(rows)
