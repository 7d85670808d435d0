"""What every coverage test shares: the band a nominal 95% interval's empirical coverage must
fall in over ≥ 300 replications (Monte Carlo error ≈ 0.013), and a printed line per design."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from tests.workers import cores_per_worker

REPLICATIONS = 300
BAND = (0.92, 0.98)


def record(design: str, covered, widths, conservative: bool = False) -> float:
    """Empirical coverage of ``covered`` (booleans), printed with the mean width; asserted in
    :data:`BAND`, or at least its lower end for an interval documented as conservative."""
    covered = np.asarray(covered, dtype=bool)
    share = float(covered.mean())
    kind = "conservative" if conservative else "exact"
    print(f"{design}: coverage {share:.3f} over {len(covered)} ({kind}), mean width "
          f"{np.nanmean(widths):.4g}")  # fmt: skip
    assert len(covered) >= REPLICATIONS
    assert share >= BAND[0], f"{design}: coverage {share:.3f} below {BAND[0]}"
    if not conservative:
        assert share <= BAND[1], f"{design}: coverage {share:.3f} above {BAND[1]}"
    return share


def covers(low: float, high: float, truth: float) -> bool:
    """An interval that is not there (NaN) does not cover."""
    return bool(low <= truth <= high)


def replicate(replication: Callable[[int], dict], replications: int = REPLICATIONS) -> dict:
    """``replication(r)`` for r = 0 … ``replications`` − 1, over this test process's cores
    (:func:`tests.workers.cores_per_worker`): each replication returns ``{metric: (covered,
    width)}``; the result is ``{metric: (covered list, width list)}`` in the order of r.
    ``replication`` must be picklable (a function at a module's top level, or a
    ``functools.partial`` of one): the workers start afresh (spawn), so a test process's
    threads never reach them."""
    workers = min(cores_per_worker(), 4)
    if workers > 1:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            rows = list(pool.map(replication, range(replications), chunksize=10))
    else:
        rows = [replication(r) for r in range(replications)]
    return {
        metric: ([row[metric][0] for row in rows], [row[metric][1] for row in rows])
        for metric in rows[0]
    }
