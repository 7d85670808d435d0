"""Variances and intervals for statistics of crossed designs: units that share subjects and
templates.

A template-built set crosses its draws: every subject (or name) meets every template, so two
units that share a subject or a template are not independent, and an interval that resamples
units (a subject pair × template) as if they were misses the variation between templates and
between subjects. Both are draws: a number describes the model over templates and subjects
like these.

**Model.** The variance is that of the crossed random-effects model: a unit's value is the sum
of an effect of each of its subjects, of its template, of each subject at its template, of its
subject pair (where pairs meet several templates), and its own noise. Each part of the spread
is seen by a delete-one-cluster jackknife (the CV3 variance that MacKinnon, Nielsen & Webb
2023, *J. Econometrics* 232(2), recommend for few
clusters), one per kind of cluster:

* subjects, one stratum at a time (a CID group's names, a gender list's names): a subject goes
  with every unit it is in (a subject pair's unit goes with either: the delete-one-vertex
  jackknife of dyadic data);
* templates; a subject's units at one template; a subject pair's units (across templates);
  single units.

Each jackknife sees several parts at once (deleting a subject also moves the template means a
little), so they are combined as Cameron, Gelbach & Miller (2011, *J. Bus. Econ. Stat.* 29(2))
combine their one-way variances (V_A + V_B − V_AB), with the weights solved from the design
itself: for the mean of the units, the expected value of each jackknife under each part of the
model is computed exactly (a trace), and the weights make the combination unbiased for every
part at once. A statistic that is not a mean (a ratio, a maximum) takes the same weights
through its linearisation. Where the combination is not positive, or the design is not
complete (:attr:`Design.complete`), the largest one-way jackknife stands in where it is the
larger.

The interval is Student's t with G − 1 degrees of freedom, G the fewer of the subjects and the
templates (Cameron, Gelbach & Miller's advice for few clusters): honest with 4 templates, and
wide. A statistic is computed from per-cell sums over units (Σ C and n per subject and
attribute…), so a deletion is the totals less the deleted cluster's sums.

Statistics that are a maximum or an absolute value of means (UnQover's μ, η, θ4) are biased
upwards by noise; :func:`~.intervals.bounds_interval` gives those a conservative interval.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import sparse

NO_LEVEL = -1
"""The second subject of a unit that holds one."""

BATCH_CELLS = 4_000_000
"""Deletions × cells held at once (32 MB of float64 per array)."""

DELETED_BATCH = 256
"""Deletions per pass of a statistic that recomputes only the groups a deletion touches."""

MAX_DELETIONS = 4_000
"""Above this many clusters of one kind (single units, subject pairs of a large set), the
jackknife of that kind is estimated from a seeded random subset of this many deletions: an
unbiased estimate of the full one, a few per cent off, instead of tens of thousands of passes."""

Sums = dict[str, np.ndarray]
"""Named (rows, cells) arrays of per-cell sums."""
Statistic = Callable[[Sums], dict[str, np.ndarray]]
"""Per-cell sums (one row per deletion) → each named quantity, one value per row."""


@dataclass(frozen=True)
class Part:
    """One kind of cluster: its (clusters × units) 0/1 membership and the stratum of each
    cluster (deletions are compared within a stratum)."""

    name: str
    membership: sparse.csr_matrix
    strata: np.ndarray


@dataclass(frozen=True)
class Design:
    """Who shares what: per unit its subject(s) (``second`` :data:`NO_LEVEL` for one) and its
    template (None when the set has no template factor), and each subject's stratum.

    ``subjects_fixed``: the subjects are the population asked about (these 11 religions), not
    draws from one (first names): then no rerun would change them, every random part of the
    model is nested in a template (its effect, a subject's or a pair's effect at it, a unit's
    noise), the templates are independent clusters, and the variance is the templates'
    delete-one jackknife alone, with T − 1 degrees of freedom."""

    first: np.ndarray
    second: np.ndarray | None = None
    template: np.ndarray | None = None
    strata: np.ndarray | None = None
    subjects_fixed: bool = False

    def __post_init__(self) -> None:
        if self.subjects_fixed and self.template is None:
            raise ValueError("fixed subjects need a template factor: nothing else is drawn")

    @property
    def units(self) -> int:
        return len(self.first)

    def _incidence(self) -> tuple[np.ndarray, np.ndarray]:
        """(subject, unit) of every place a subject is in a unit."""
        unit = np.arange(self.units)
        if self.second is None:
            return np.asarray(self.first), unit
        has = self.second >= 0
        return np.concatenate([self.first, self.second[has]]), np.concatenate([unit, unit[has]])

    def _stratum_of(self, subject: np.ndarray) -> np.ndarray:
        if self.strata is None:
            return np.zeros(len(subject), dtype=np.int64)
        return np.asarray(self.strata)[subject]

    @cached_property
    def complete(self) -> bool:
        """Every subject pair meets every template (or there is no template factor). Where
        not (a file of some contexts), many clusters hold one unit, the parts of the model
        cannot be told apart, and the variance is the larger of the combination and the
        largest one-way jackknife: conservative (ε 0.977 where the combination gave 0.907,
        100 random contexts of 1,120)."""
        if self.template is None or self.second is None:
            return True
        pairs = len(np.unique(np.stack([self.first, self.second], axis=1), axis=0))
        return self.units >= pairs * len(np.unique(self.template))

    @property
    def df(self) -> int:
        """Degrees of freedom of the t interval: the fewest clusters of a factor (the subjects
        of each stratum, the templates), less one."""
        if self.subjects_fixed:
            return max(0, len(np.unique(self.template)) - 1)
        subject, _ = self._incidence()
        stratum = self._stratum_of(subject)
        counts = [len(np.unique(subject[stratum == value])) for value in np.unique(stratum)]
        if self.template is not None:
            counts.append(len(np.unique(self.template)))
        return max(0, min(counts) - 1)

    def _matrix(self, keys: list[np.ndarray], unit: np.ndarray):
        stacked = np.stack(keys, axis=1)
        clusters, inverse = np.unique(stacked, axis=0, return_inverse=True)
        matrix = sparse.csr_matrix(
            (np.ones(len(unit)), (inverse.ravel(), unit)), shape=(len(clusters), self.units)
        )
        matrix.data[:] = 1.0  # a unit holding one subject twice is still deleted once
        return matrix, clusters

    @cached_property
    def parts(self) -> list[Part]:
        """The kinds of cluster the variance is built from (module docstring)."""
        if self.subjects_fixed:
            member, _ = self._matrix([np.asarray(self.template)], np.arange(self.units))
            return [Part("template", member, np.zeros(member.shape[0], int))]
        subject, at = self._incidence()
        stratum = self._stratum_of(subject)
        parts = []
        for value in np.unique(stratum):
            keep = stratum == value
            member, _ = self._matrix([subject[keep]], at[keep])
            parts.append(Part(f"subject {value}", member, np.zeros(member.shape[0], int)))
        if self.template is not None:
            template = np.asarray(self.template)
            member, _ = self._matrix([template], np.arange(self.units))
            parts.append(Part("template", member, np.zeros(member.shape[0], int)))
            for value in np.unique(stratum):
                keep = stratum == value
                member, _ = self._matrix([subject[keep], template[at[keep]]], at[keep])
                parts.append(
                    Part(f"subject {value} × template", member, np.zeros(member.shape[0], int))
                )
            if self.second is not None:
                member, _ = self._pairs()
                parts.append(Part("pair", member, np.zeros(member.shape[0], int)))
        unit = sparse.identity(self.units, format="csr")
        parts.append(Part("unit", unit, np.zeros(self.units, int)))
        return parts

    def components(self) -> list[sparse.csr_matrix]:
        """The incidence (units × levels) of each part of the random-effects model."""
        subject, at = self._incidence()
        stratum = self._stratum_of(subject)
        out = []
        for value in np.unique(stratum):
            keep = stratum == value
            out.append(self._matrix([subject[keep]], at[keep])[0].T.tocsr())
        if self.template is not None:
            template = np.asarray(self.template)
            out.append(self._matrix([template], np.arange(self.units))[0].T.tocsr())
            for value in np.unique(stratum):
                keep = stratum == value
                out.append(self._matrix([subject[keep], template[at[keep]]], at[keep])[0].T.tocsr())
            if self.second is not None:
                out.append(self._pairs()[0].T.tocsr())
        out.append(sparse.identity(self.units, format="csr"))
        return out

    def _pairs(self):
        """Clusters of the units that share both subjects (a pair across templates)."""
        return self._matrix([self.first, self.second], np.arange(self.units))

    @cached_property
    def weights(self) -> np.ndarray:
        """The combination of the parts' jackknifes that is unbiased for the mean of the units
        under every component of the model (module docstring); the same design (a rerun, a
        simulation) reuses it. Fixed subjects: the templates' jackknife alone (weight 1)."""
        if self.subjects_fixed:
            return np.ones(1)
        key = hashlib.sha256()
        for array in (self.first, self.second, self.template, self.strata):
            key.update(b"-" if array is None else np.ascontiguousarray(array, np.int64).tobytes())
        return _weights(key.hexdigest(), self)


_WEIGHTS: dict[str, np.ndarray] = {}
"""Combination weights by design (a handful: one per set a process computes)."""


def _weights(key: str, design: Design) -> np.ndarray:
    if key not in _WEIGHTS:
        parts, components = design.parts, design.components()
        n = design.units
        expected = np.array([[_expected_jackknife(p, z, n) for z in components] for p in parts])
        truth = np.array([_true_variance(z, n) for z in components])
        if len(_WEIGHTS) > 64:
            _WEIGHTS.clear()
        _WEIGHTS[key] = np.linalg.lstsq(expected.T, truth, rcond=None)[0]
    return _WEIGHTS[key]


def _true_variance(z: sparse.csr_matrix, n: int) -> float:
    """Var of the mean of n units whose values share a unit-variance effect per column of z."""
    counts = np.asarray(z.sum(axis=0)).ravel()
    return float((counts**2).sum()) / n**2


def _expected_jackknife(part: Part, z: sparse.csr_matrix, n: int) -> float:
    """E of the part's jackknife variance of the mean of the units, under unit-variance effects
    per column of z: Σ_strata (G − 1)/G ‖centred deletion means · z‖², where deletion g's
    mean row is (c − r_g)/k_g, c the column totals of z, r_g the deleted units' rows, k_g the
    units kept (sparse throughout: no clusters × levels matrix)."""
    member = part.membership
    kept = n - np.asarray(member.sum(axis=1)).ravel()
    totals = np.asarray(z.sum(axis=0)).ravel()
    removed = (member @ z).tocsr()
    total = 0.0
    for stratum in np.unique(part.strata):
        rows = np.flatnonzero(part.strata == stratum)
        if len(rows) < 2 or np.any(kept[rows] <= 0):
            continue
        g, k = len(rows), kept[rows]
        r = removed[rows]
        dots = np.asarray(r @ totals).ravel()
        squares = np.asarray(r.multiply(r).sum(axis=1)).ravel()
        norms = (totals @ totals - 2 * dots + squares) / k**2
        centre = (totals * (1 / k).sum() - np.asarray(r.T @ (1 / k)).ravel()) / g
        total += (g - 1) / g * float(norms.sum() - g * centre @ centre)
    return total


def _jackknife(values: np.ndarray, strata: np.ndarray, scale: float = 1.0) -> float:
    """Σ over strata of (G − 1)/G Σ (θ₍₋g₎ − mean)² (NaN where a deletion is undefined); for
    a random subset of the deletions (``scale`` = all / drawn), G is the whole kind's and the
    sum is scaled up."""
    if not np.all(np.isfinite(values)):
        return math.nan
    total = 0.0
    for stratum in np.unique(strata):
        part = values[strata == stratum]
        m = len(part)
        if m > 1:
            g = m * scale  # a simple random sample's Σ(θ − mean)² · (G − 1)/(m − 1) estimates G's
            squares = float(((part - part.mean()) ** 2).sum())
            total += (g - 1) / g * squares * (g - 1) / (m - 1)
    return total


def one_way_variances(
    matrices: dict[str, sparse.spmatrix], statistic: Statistic, design: Design
) -> tuple[dict[str, float], list[dict[str, float]]]:
    """The statistic's values on the whole set and, per part of the design
    (:attr:`Design.parts`), each value's delete-one-cluster jackknife variance. ``matrices``:
    per name, a (units × cells) matrix of each unit's sums."""
    matrices = {k: sparse.csr_matrix(m) for k, m in matrices.items()}
    totals = {k: np.asarray(m.sum(axis=0)).reshape(1, -1) for k, m in matrices.items()}
    point = {k: float(v[0]) for k, v in statistic(totals).items()}
    deleted = getattr(statistic, "deleted", None)  # a statistic that reads touched cells only
    cells = sum(m.shape[1] for m in matrices.values())
    batch = DELETED_BATCH if deleted else max(1, BATCH_CELLS // max(cells, 1))
    per_part = []
    for number, part in enumerate(design.parts):
        removed = {k: (part.membership @ m).tocsr() for k, m in matrices.items()}
        count = part.membership.shape[0]
        chosen, scale = np.arange(count), 1.0
        if count > MAX_DELETIONS:
            rng = np.random.default_rng([count, number])
            chosen = np.sort(rng.choice(count, MAX_DELETIONS, replace=False))
            scale = count / MAX_DELETIONS
        values: dict[str, list[np.ndarray]] = {}
        for start in range(0, len(chosen), batch):
            rows = chosen[start : start + batch]
            if deleted:
                found = deleted(totals, {k: r[rows] for k, r in removed.items()})
            else:
                found = statistic({k: totals[k] - r[rows].toarray() for k, r in removed.items()})
            for key, value in found.items():
                values.setdefault(key, []).append(np.asarray(value, dtype=float))
        per_part.append(
            {
                k: _jackknife(np.concatenate(v), part.strata[chosen], scale)
                for k, v in values.items()
            }
        )
    return point, per_part


def combined_variance(one_way: np.ndarray, design: Design) -> float:
    """The parts' jackknifes (in :attr:`Design.parts` order) combined by the design's weights;
    where that is not positive or the design is incomplete, the larger of it and the largest
    one-way jackknife (module docstring)."""
    combined = float(design.weights @ one_way)
    fallback = float(np.nanmax(one_way)) if np.isfinite(one_way).any() else math.nan
    fallback = max(fallback, combined) if math.isfinite(combined) else fallback
    return combined if combined > 0 and design.complete else fallback


def crossed_variances(
    matrices: dict[str, sparse.spmatrix], statistic: Statistic, design: Design
) -> tuple[dict[str, float], dict[str, float]]:
    """The statistic's values on the whole set and their crossed-design variances (module
    docstring). ``matrices``: per name, a (units × cells) matrix of each unit's sums."""
    point, per_part = one_way_variances(matrices, statistic, design)
    variances = {
        key: combined_variance(np.array([p[key] for p in per_part]), design) for key in point
    }
    return point, variances
