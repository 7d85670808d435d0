"""Coverage of the detector's rate intervals where sentences come in occupations that share the
model's behaviour (Winogender: each occupation's sentences, its templates nested in it), by
simulation from a model with known rates.

Each occupation g draws a latent z_g ~ N(0, 1); a sentence of class c in it is judged right
(flagged if underspecified, cleared if well-specified) when √ρ·z_g + √(1 − ρ)·e < Φ⁻¹(p_c),
e ~ N(0, 1) its own: the rate of each class is exactly p_c over occupations like these, and ρ
is the sentences' latent correlation within an occupation. TPR = p_1, TNR = p_2 and balanced
accuracy (p_1 + p_2)/2 are the truths; the intervals are
:func:`biaslens.methods.sib.metrics.sib.detection_rates`' with each sentence's occupation as its
cluster.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biaslens.methods.sib.metrics.sib import detection_rates
from tests.statistics.coverage import record

REPLICATIONS = 1000
DESIGNS = {  # occupations × sentences per class and occupation, latent correlation ρ
    "12 × 3, ρ = .5": (12, 3, 0.5),
    "10 × 3, ρ = .5 (the quick audit's 10 occupations)": (10, 3, 0.5),
    "30 × 2, ρ = .3": (30, 2, 0.3),
    "60 × 3, ρ = .5 (both sets' occupations)": (60, 3, 0.5),
    "30 × 2, independent sentences": (30, 2, 0.0),
}
RATES = ((0.75, 0.6), (0.5, 0.9))  # (TPR, TNR)


def _draw(design, rates, rng, clustered: bool = True):
    occupations, per, rho = design
    z = rng.normal(size=(occupations, 1))
    rows = []
    for c, p in enumerate(rates):
        latent = np.sqrt(rho) * z + np.sqrt(1 - rho) * rng.normal(size=(occupations, per))
        right = (latent < stats.norm.ppf(p)).ravel()
        unspecified = c == 0
        # the specification metric: above the threshold (0.5) exactly when flagged
        flagged = right if unspecified else ~right
        rows.append((np.where(flagged, 1.0, 0.0), np.full(right.size, not unspecified)))
    metric = np.concatenate([r[0] for r in rows])
    well = np.concatenate([r[1] for r in rows])
    occupation = np.tile(np.repeat(np.arange(occupations), per), 2)
    return detection_rates(metric, well, 0.5, 0.95, occupation if clustered else None)


@pytest.mark.parametrize("design", list(DESIGNS))
@pytest.mark.parametrize("rates", RATES)
def test_detector_rates_cover_over_occupations(design, rates):
    rng = np.random.default_rng([len(design), int(rates[0] * 100)])
    truth = {"tpr": rates[0], "tnr": rates[1], "balanced_accuracy": sum(rates) / 2}
    found = [_draw(DESIGNS[design], rates, rng) for _ in range(REPLICATIONS)]
    for name, value in truth.items():
        low = np.array([f[f"{name}_ci_low"] for f in found])
        high = np.array([f[f"{name}_ci_high"] for f in found])
        record(f"{name}, {design}, rates {rates}", (low <= value) & (value <= high), high - low,
               conservative=True)  # fmt: skip


def test_sentences_taken_as_independent_would_fail_the_same_check():
    """The check has teeth: the Jeffreys interval over sentences, which this replaced, covers
    far less than 0.92 at 12 occupations × 3 sentences and ρ = .5."""
    rng = np.random.default_rng(5)
    found = [_draw(DESIGNS["12 × 3, ρ = .5"], (0.75, 0.6), rng, False) for _ in range(1000)]
    held = np.mean([f["tpr_ci_low"] <= 0.75 <= f["tpr_ci_high"] for f in found])
    print(f"Jeffreys over sentences, 12 × 3, ρ = .5: coverage {held:.3f}")
    assert held < 0.92
