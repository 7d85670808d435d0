"""Seeded percentile bootstrap over the unit a method sampled (Efron & Tibshirani 1993, ch. 13).

A metric whose sampling unit is not one row — UnQover's contexts come in subject pairs ×
templates, CID's continuations in name pairs — gets its interval by resampling those units with
replacement. Every metric here is a function of sums over units (Σ C and its count per cell, Σ
of error terms, …), so a replicate is a weighted sum: ``weights @ unit_sums``, with ``weights``
the number of times each unit was drawn. Replicate r draws its units with
``numpy.random.default_rng([seed, r])``, so a replicate can be rebuilt on its own (the tests
rebuild them naively) and the intervals do not depend on how replicates are batched.

The interval is the (1 − level)/2 and (1 + level)/2 quantiles of the replicates (NumPy's
default, linear interpolation); NaN replicates (a cell that no drawn unit reached) are left out.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

BATCH_CELLS = 4_000_000
"""Replicates × cells held at once (32 MB of float64 per array)."""


def draws(n_units: int, replicate: int, seed: int) -> np.ndarray:
    """How many times each of ``n_units`` units is drawn in replicate ``replicate``."""
    picked = np.random.default_rng([seed, replicate]).integers(0, n_units, n_units)
    return np.bincount(picked, minlength=n_units)


def weight_batches(
    n_units: int, replicates: int, seed: int, cells: int = 1
) -> Iterator[np.ndarray]:
    """The replicates' draw counts as (batch, n_units) arrays, few enough rows at a time that
    batch × ``cells`` stays under :data:`BATCH_CELLS`."""
    batch = max(1, min(replicates, BATCH_CELLS // max(cells, n_units, 1)))
    for start in range(0, replicates, batch):
        stop = min(replicates, start + batch)
        yield np.stack([draws(n_units, r, seed) for r in range(start, stop)]).astype(float)


def percentile_interval(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Low and high quantiles of the replicates along axis 0 (NaN replicates left out)."""
    import warnings

    tail = (1 - level) / 2
    with warnings.catch_warnings():  # "All-NaN slice": a cell no replicate reached, by rule
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(values, [tail, 1 - tail], axis=0)
    return low, high


def ratio_intervals(
    numerators: np.ndarray,
    denominators: np.ndarray,
    replicates: int,
    level: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of Σ numerator / Σ denominator per cell, units resampled: both arrays are
    (units, cells), e.g. the biased continuations and all continuations of each name pair in
    each (group, λ) cell."""
    n_units, cells = numerators.shape
    values = []
    for weights in weight_batches(n_units, replicates, seed, cells):
        with np.errstate(invalid="ignore", divide="ignore"):
            values.append((weights @ numerators) / (weights @ denominators))
    return percentile_interval(np.concatenate(values), level)
