"""Two detectors' TPR, TNR and balanced accuracy on the same sentences, paired
(:func:`biaslens.metrics.intervals.shares.paired_rate_differences`), by simulation with a known
truth at the quick audit's design (10 occupations).

Occupations are draws: occupation g shifts model A's log-odds of flagging by a_g and model B's
by b_g = 0.6 a_g + its own part (the two react alike to an occupation in part); every sentence
shifts both by the same s_i (a hard sentence is hard for both: what pairing cancels). A sentence
is flagged with probability expit(intercept + cluster + sentence effect), by each model on its
own. The truth is the population difference of the rates (Monte Carlo over fresh occupations
and sentences, not from the estimator), and each interval must cover it in [0.92, 0.98] of 300
replications. A test with the pairing broken on purpose (model B's verdicts moved to other
occupations, which leaves its rates as they were) finds the interval it then gives wider than
the paired one: the pairing is what makes it narrow.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from scipy.special import expit

from biaslens.metrics.intervals.shares import paired_rate_differences
from tests.statistics.coverage import covers, record, replicate

OCCUPATIONS, PER_CLASS = 10, 12  # the quick audit: 10 occupations, 12 sentences of each class
INTERCEPTS = {"a": (0.8, 0.4), "b": (0.3, 0.9)}  # (flag unspecified, clear well-specified)
CLUSTER_SD, SENTENCE_SD, SHARED = 0.7, 1.0, 0.6


def _draw(rng, occupations: int, per_class: int) -> tuple[np.ndarray, ...]:
    """Both models' flags on ``occupations`` × 2 classes × ``per_class`` sentences."""
    a = rng.normal(0, CLUSTER_SD, occupations)
    b = SHARED * a + rng.normal(0, CLUSTER_SD * np.sqrt(1 - SHARED**2), occupations)
    shape = (occupations, 2, per_class)
    sentence = rng.normal(0, SENTENCE_SD, shape)
    positive = np.zeros(shape, dtype=bool)
    positive[:, 0] = True
    flags = []
    for model, shift in (("a", a), ("b", b)):
        flag_positive, clear_negative = INTERCEPTS[model]
        # a positive sentence is flagged with expit(x); a negative one cleared with expit(x')
        odds = np.where(positive, flag_positive, clear_negative) + shift[:, None, None] + sentence
        hit = rng.random(shape) < expit(odds)
        flags.append(np.where(positive, hit, ~hit))
    clusters = np.broadcast_to(np.arange(occupations)[:, None, None], shape)
    return flags[0].ravel(), flags[1].ravel(), positive.ravel(), clusters.ravel()


@cache
def _truth() -> dict[str, float]:
    rng = np.random.default_rng(12345)
    a, b, positive, _ = _draw(rng, 200_000, 4)
    tpr = a[positive].mean() - b[positive].mean()
    tnr = (1 - a[~positive]).mean() - (1 - b[~positive]).mean()
    return {"tpr": tpr, "tnr": tnr, "balanced_accuracy": (tpr + tnr) / 2}


def _replication(r: int) -> dict:
    a, b, positive, clusters = _draw(np.random.default_rng([r, 7]), OCCUPATIONS, PER_CLASS)
    found = paired_rate_differences(a, b, positive, clusters)
    out = {}
    for name, truth in _truth().items():
        _, interval = found[name]
        out[name] = (covers(interval.low, interval.high, truth), interval.high - interval.low)
    return out


def test_the_paired_rate_differences_cover():
    for name, (covered, widths) in replicate(_replication).items():
        record(f"sib-detect {name}, model A − model B, quick design", covered, widths)


def test_broken_pairing_gives_a_wider_interval():
    """Model B's verdicts moved to other occupations (its rates unchanged, the occupation
    effects it shares with A no longer aligned): the interval widens, on average, by more than
    a fifth; with the pairing kept it is the narrower."""
    paired, broken = [], []
    for r in range(100):
        rng = np.random.default_rng([r, 8])
        a, b, positive, clusters = _draw(rng, OCCUPATIONS, PER_CLASS)
        moved = b.reshape(OCCUPATIONS, -1)[np.roll(np.arange(OCCUPATIONS), 1)].ravel()
        for widths, other in ((paired, b), (broken, moved)):
            found = paired_rate_differences(a, other, positive, clusters)["balanced_accuracy"]
            widths.append(found[1].high - found[1].low)
    assert np.mean(broken) > 1.2 * np.mean(paired), (np.mean(paired), np.mean(broken))
