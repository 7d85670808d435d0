"""What every coverage test shares: the band a nominal 95% interval's empirical coverage must
fall in over ≥ 300 replications (Monte Carlo error ≈ 0.013), and a printed line per design."""

from __future__ import annotations

import numpy as np

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
