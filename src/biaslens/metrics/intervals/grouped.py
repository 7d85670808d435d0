"""Statistics that are means over groups of a per-group value, with the jackknife's deletions
recomputed on the groups they touch.

UnQover's μ is the mean over subjects of a value read from that subject's cells (its
attributes); θ4 the mean over subject pairs. A deletion of the crossed-design jackknife
(:mod:`.crossed`) removes the units of one subject, pair, template or unit, which change the
cells of a few groups only (a pair's deletion: two subjects of 140, one pair of 4,900). Reading
every group again for each of thousands of deletions is what made the intervals 40× slower
than the point values; :meth:`GroupedStatistic.deleted` gives the same values from the groups
each deletion touches: the whole set's per-group values, less the touched groups' old values,
plus their values recomputed (exact, up to the order of floating-point sums).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

Sums = dict[str, np.ndarray]
PerGroup = Callable[[Sums, Sums, np.ndarray], np.ndarray]
"""``(sums, fixed, starts)`` → ``(rows, groups)`` values: ``sums`` and ``fixed`` hold
``(rows, cells)`` arrays (``fixed``: per-cell arrays that do not change with a deletion, such as
a cross-fit's choices, one row), ``starts`` where each group's cells begin."""


def mean_over_groups(per_group: np.ndarray) -> np.ndarray:
    """Per row: the mean over the groups that have a value (NaN: none)."""
    with np.errstate(invalid="ignore"):
        reached = np.isfinite(per_group)
        count = reached.sum(axis=1)
        total = np.where(reached, per_group, 0.0).sum(axis=1)
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def group_mean(value, present, starts):
    """Per row and group: the mean of ``value`` over present cells (NaN: none)."""
    count = np.add.reduceat(present.astype(float), starts, axis=1)
    total = np.add.reduceat(np.where(present, value, 0.0), starts, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def ratio(a, b):
    """a / b where b > 0, NaN elsewhere (element-wise)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)


@dataclass(frozen=True)
class GroupedMean:
    """One statistic: the mean over groups of ``per_group`` of the sums ``keys`` (all over the
    same cells, grouped by ``starts``)."""

    keys: tuple[str, ...]
    starts: np.ndarray
    per_group: PerGroup
    fixed: Sums = field(default_factory=dict)

    def groups(self, sums: Sums) -> np.ndarray:
        return self.per_group({k: sums[k] for k in self.keys}, self.fixed, self.starts)


class GroupedStatistic:
    """Named :class:`GroupedMean` statistics, and ``scalars(sums)`` for the rest (ratios of a
    few sums, cheap on whole rows). Called on ``(rows, cells)`` sums, as any statistic of
    :func:`~.crossed.crossed_variances`; :meth:`deleted` is its fast path for deletions."""

    def __init__(
        self,
        grouped: dict[str, GroupedMean],
        scalars: Callable[[Sums], dict[str, np.ndarray]],
        scalar_keys: tuple[str, ...],
    ) -> None:
        self.grouped = grouped
        self.scalars = scalars
        self.scalar_keys = scalar_keys
        self._whole: tuple[Sums, dict[str, np.ndarray]] | None = None

    def __call__(self, sums: Sums) -> dict[str, np.ndarray]:
        out = {name: mean_over_groups(g.groups(sums)) for name, g in self.grouped.items()}
        return {**out, **self.scalars(sums)}

    def _whole_groups(self, totals: Sums) -> dict[str, np.ndarray]:
        """Each statistic's per-group values on the whole set (computed once per set)."""
        if self._whole is None or self._whole[0] is not totals:  # held: its id is not reused
            self._whole = (totals, {n: g.groups(totals)[0] for n, g in self.grouped.items()})
        return self._whole[1]

    def deleted(self, totals: Sums, removed: dict[str, sparse.csr_matrix]) -> dict:
        """The statistics with each row of ``removed`` (one deletion's sums, sparse) taken
        from ``totals`` (one row): for the grouped ones, from the groups each deletion
        touches (a cell where any of its sums is removed), gathered once for the statistics
        that share their cells; the scalars on whole rows."""
        deletions = next(iter(removed.values())).shape[0]
        whole = self._whole_groups(totals)
        families: dict[int, list[str]] = {}
        for name, grouped in self.grouped.items():
            families.setdefault(id(grouped.starts), []).append(name)
        out = {}
        for names in families.values():
            keys = tuple(dict.fromkeys(k for n in names for k in self.grouped[n].keys))
            touched = _Touched(self.grouped[names[0]].starts, totals, removed, keys)
            for name in names:
                out[name] = touched.mean(self.grouped[name], whole[name], deletions)
        rows = {k: totals[k] - removed[k].toarray() for k in self.scalar_keys}
        return {**out, **self.scalars(rows)}


class _Touched:
    """The cells of the groups each deletion of a batch touches, laid end to end (one segment
    per deletion × group), with the sums ``keys`` there: the whole set's, less the deletion's."""

    def __init__(self, starts: np.ndarray, totals: Sums, removed: dict, keys) -> None:
        groups = len(starts)
        cells = totals[keys[0]].shape[1]
        sizes = np.diff(np.append(starts, cells))
        group_of_cell = np.repeat(np.arange(groups), sizes)
        deletions = removed[keys[0]].shape[0]
        taken = {key: removed[key].tocoo() for key in keys}
        marked = np.zeros((deletions, groups), dtype=bool)
        for entries in taken.values():
            marked[entries.row, group_of_cell[entries.col]] = True
        self.deletion, self.group = np.nonzero(marked)
        lengths = sizes[self.group]
        self.offsets = np.cumsum(lengths) - lengths
        segment = np.full((deletions, groups), -1, dtype=np.int64)
        segment[self.deletion, self.group] = np.arange(len(self.group))
        columns = np.repeat(starts[self.group] - self.offsets, lengths) + np.arange(lengths.sum())
        self.sums = {}
        for key, entries in taken.items():
            cell_group = group_of_cell[entries.col]
            at = self.offsets[segment[entries.row, cell_group]] + entries.col - starts[cell_group]
            values = totals[key][0, columns]
            values[at] -= entries.data
            self.sums[key] = values[None, :]
        self.columns = columns

    def mean(self, grouped: GroupedMean, whole: np.ndarray, deletions: int) -> np.ndarray:
        """Per deletion: the mean over groups of ``grouped``'s per-group value, from the whole
        set's (``whole``) with the touched groups' recomputed."""
        if not len(self.group):
            return np.full(deletions, mean_over_groups(whole[None, :])[0])
        sums = {k: self.sums[k] for k in grouped.keys}
        fixed = {k: v[0, self.columns][None, :] for k, v in grouped.fixed.items()}
        new = grouped.per_group(sums, fixed, self.offsets)[0]
        old = whole[self.group]
        reached = np.isfinite(whole)
        new_ok, old_ok = np.isfinite(new), np.isfinite(old)
        change = np.where(new_ok, new, 0.0) - np.where(old_ok, old, 0.0)
        total = whole[reached].sum() + np.bincount(self.deletion, change, minlength=deletions)
        count = reached.sum() + np.bincount(
            self.deletion, new_ok.astype(float) - old_ok, minlength=deletions
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0.5, total / np.maximum(count, 1), np.nan)
