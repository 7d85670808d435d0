"""Intervals of shares: of independent units (Jeffreys), of the mean of two independent shares
(adjusted Wald), of a share from a clustered design (Korn–Graubard) and of the difference of
two independent shares (Newcombe).

* A share of independent units (TPR, TNR): the Jeffreys interval, the Beta(x + ½, n − x + ½)
  quantiles, 0 at x = 0 and 1 at x = n (Brown, Cai & DasGupta 2001, *Statistical Science*
  16(2), who recommend it beside Wilson's for small n). Its exact coverage stays within
  [0.935, 0.98] at n = 12, 36, 200 and p = .5, .75, .95, where Wilson's falls to 0.914
  (n = 12, p = .75).
* The mean of two independent shares (balanced accuracy): the adjusted Wald interval of a
  linear combination of proportions (Agresti & Caffo 2000; Price & Bonett 2004), each share
  taken as (x + 1) / (n + 2).
* A share whose units share names or subjects (CID's fraction biased, LEI's win rate):
  :func:`clustered_share_interval`.
* Shares of sentences that come in clusters sharing the model's behaviour (SIB's detector rates
  over Winogender's occupations): :func:`cluster_rates`, Korn–Graubard at the cluster-robust
  variance and a t interval with it for the mean of the two rates.
* The difference of two independent shares (SIB Method 2 from sampled replies): Newcombe's
  hybrid score interval (Newcombe 1998, *Statistics in Medicine* 17(8), method 10).
* The difference of two models' detector rates on the same sentences, in the same clusters:
  :func:`paired_rate_differences`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from biaslens.metrics.intervals.core import LEVEL, Interval, t_quantile


def share_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Jeffreys interval of ``successes / n`` (NaN, NaN when n is 0)."""
    if n <= 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=1 - level, method="jeffreys")
    # at 0 and n the bounds are exactly 0 and 1 (rounding would leave 3e-17 or step past)
    low = 0.0 if successes == 0 else max(0.0, float(low))
    high = 1.0 if successes == n else min(1.0, float(high))
    return low, high


def mean_of_two_shares(
    x1: int, n1: int, x2: int, n2: int, level: float = LEVEL
) -> tuple[float, float]:
    """Interval of (x1/n1 + x2/n2) / 2 for independent samples (adjusted Wald, see the
    module); NaN, NaN when either n is 0."""
    if n1 <= 0 or n2 <= 0:
        return math.nan, math.nan
    centre, spread = _adjusted_mean(x1, n1, x2, n2)
    z = stats.norm.ppf(0.5 + level / 2)
    return max(0.0, centre - z * spread), min(1.0, centre + z * spread)


def _adjusted_mean(x1: float, n1: float, x2: float, n2: float) -> tuple[float, float]:
    """(x1/n1 + x2/n2) / 2 with each share taken as (x + 1) / (n + 2), and its standard error
    for independent samples (Agresti & Caffo 2000)."""
    p1, p2 = (x1 + 1) / (n1 + 2), (x2 + 1) / (n2 + 2)
    spread = math.sqrt(p1 * (1 - p1) / (n1 + 2) + p2 * (1 - p2) / (n2 + 2)) / 2
    return (p1 + p2) / 2, spread


def clustered_share_interval(
    successes: float, n: float, variance: float, df: int, level: float
) -> Interval:
    """The Korn–Graubard interval of a share from a clustered design (Korn & Graubard 1998,
    *Survey Methodology* 24(2); the NCHS standard for proportions from complex surveys): the
    Clopper–Pearson interval at the effective sample size n* = p̂(1 − p̂)/variance (at most n:
    a design effect below 1 is not credited), shrunk for the variance's few degrees of freedom
    by (z/t_df)². Where p̂ is 0 or 1 the design effect cannot be told and n* is n (then the
    interval is [0, 1 − (α/2)^(1/n*)]: an upper bound, not [0, 0]). A t interval on the share
    undercovers where it is small (0.86 at a true 1.8% with name effects); this one covers at
    least its level there (0.93 to 0.95 at 1%, 5% and 30%), more where the names have no effect
    (0.99: the few-df shrinkage is then not needed)."""
    if df < 1:
        return Interval.none("one name, subject or template only: nothing to tell the spread from")
    if not (n > 0 and math.isfinite(variance)):
        return Interval.none("the value is undefined" if not n > 0 else "the spread is undefined")
    share = successes / n
    effective = n
    if 0 < share < 1 and variance > 0:
        effective = min(n, share * (1 - share) / variance)
    effective *= (stats.norm.ppf(0.5 + level / 2) / t_quantile(level, df)) ** 2
    hits, tail = share * effective, (1 - level) / 2
    low = 0.0 if successes <= 0 else float(stats.beta.ppf(tail, hits, effective - hits + 1))
    high = 1.0 if share >= 1 else float(stats.beta.ppf(1 - tail, hits + 1, effective - hits))
    return Interval(low, high, conservative=True)


def difference_of_shares(
    x1: np.ndarray, n1: np.ndarray, x2: np.ndarray, n2: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's interval of x1/n1 − x2/n2 for independent samples, element-wise (statsmodels'
    implementation)."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    low, high = confint_proportions_2indep(
        x1, n1, x2, n2, method="newcomb", compare="diff", alpha=1 - level
    )
    return np.asarray(low), np.asarray(high)


def _cluster_variance(influence: np.ndarray, clusters: np.ndarray) -> tuple[float, int]:
    """The cluster-robust variance of a linearised estimator (per unit its influence), with
    G/(G − 1) for the few clusters, and G − 1 degrees of freedom."""
    _, group = np.unique(clusters, return_inverse=True)
    totals = np.bincount(group, weights=influence)
    g = len(totals)
    return (float(g / (g - 1) * (totals**2).sum()) if g > 1 else math.nan), g - 1


def cluster_rates(
    hits: np.ndarray,
    positive: np.ndarray,
    cleared: np.ndarray,
    negative: np.ndarray,
    clusters: np.ndarray,
    level: float = LEVEL,
) -> dict[str, Interval]:
    """Intervals of TPR = Σ hits / Σ positive, TNR = Σ cleared / Σ negative and their mean
    (balanced accuracy) where the units (sentences: 0/1 arrays) come in ``clusters`` that share
    the model's behaviour (Winogender's occupations; its templates are nested in them).

    Each rate is a ratio over clusters: its cluster-robust variance is that of its
    linearisation (x − p̂·n per unit, summed per cluster, over (Σ n)²), on G − 1 degrees of
    freedom, and its interval Korn–Graubard's at that variance (:func:`clustered_share_interval`:
    the effective size never exceeds the sentence count, so a design effect below 1 is not
    credited). Balanced accuracy's variance is the larger of the clustered one (both rates'
    influences per cluster, so that their covariance counts) and the independent adjusted-Wald
    one, with a t interval on G − 1 degrees of freedom, cut to [0, 1]."""
    arrays = (hits, positive, cleared, negative)
    hits, positive, cleared, negative = (np.asarray(a, dtype=float) for a in arrays)
    clusters = np.asarray(clusters)
    out: dict[str, Interval] = {}
    influences = []
    for name, x, n in (("tpr", hits, positive), ("tnr", cleared, negative)):
        total = n.sum()
        if total <= 0:
            out[name] = Interval.none("no sentence of this class has a verdict")
            influences.append(np.zeros_like(x))
            continue
        share = x.sum() / total
        influence = (x - share * n) / total
        influences.append(influence)
        variance, df = _cluster_variance(influence, clusters)
        out[name] = clustered_share_interval(x.sum(), total, variance, df, level)
    if positive.sum() > 0 and negative.sum() > 0:
        variance, df = _cluster_variance((influences[0] + influences[1]) / 2, clusters)
        centre, spread = _adjusted_mean(hits.sum(), positive.sum(), cleared.sum(), negative.sum())
        if df < 1 or not math.isfinite(variance):
            out["balanced_accuracy"] = Interval.none(
                "one occupation only: nothing to tell the spread from"
            )
        else:
            half = t_quantile(level, df) * math.sqrt(max(variance, spread**2))
            out["balanced_accuracy"] = Interval(max(0.0, centre - half), min(1.0, centre + half))
    else:
        out["balanced_accuracy"] = Interval.none("a class has no sentence with a verdict")
    return out


def paired_rate_differences(
    flagged_a: np.ndarray,
    flagged_b: np.ndarray,
    positive: np.ndarray,
    clusters: np.ndarray,
    level: float = LEVEL,
) -> dict[str, tuple[float, Interval]]:
    """Model A − model B for TPR, TNR and balanced accuracy on the same sentences (each with a
    verdict from both; ``positive``: the sentence is of the class TPR counts), where the
    sentences come in ``clusters`` (Winogender's occupations) that share each model's
    behaviour.

    On shared sentences the two rates have the same denominator, so their difference is one
    ratio, Σ (flag_A − flag_B) / Σ n over the class; its cluster-robust variance is that of its
    linearisation summed per cluster (G/(G − 1), G − 1 degrees of freedom: the clustered
    rates' own construction, :func:`cluster_rates`), with a t interval, cut to [−1, 1]. What
    the two models share on a sentence or an occupation cancels in flag_A − flag_B."""
    a, b = np.asarray(flagged_a, dtype=float), np.asarray(flagged_b, dtype=float)
    positive, clusters = np.asarray(positive, dtype=bool), np.asarray(clusters)
    out: dict[str, tuple[float, Interval]] = {}
    influences = []
    for name, member, detected in (("tpr", positive, (a, b)), ("tnr", ~positive, (1 - a, 1 - b))):
        total = float(member.sum())
        if total <= 0:
            out[name] = (math.nan, Interval.none("no sentence of this class has two verdicts"))
            influences.append(np.zeros_like(a))
            continue
        change = np.where(member, detected[0] - detected[1], 0.0)
        difference = float(change.sum() / total)
        influence = (change - difference * member) / total
        influences.append(influence)
        out[name] = (difference, _t_difference(difference, influence, clusters, level))
    if positive.any() and (~positive).any():
        difference = (out["tpr"][0] + out["tnr"][0]) / 2
        influence = (influences[0] + influences[1]) / 2
        out["balanced_accuracy"] = (
            difference,
            _t_difference(difference, influence, clusters, level),
        )
    else:
        out["balanced_accuracy"] = (math.nan, Interval.none("a class has no sentence"))
    return out


def _t_difference(value: float, influence: np.ndarray, clusters: np.ndarray, level: float):
    variance, df = _cluster_variance(influence, clusters)
    if df < 1 or not math.isfinite(variance):
        return Interval.none("one occupation only: nothing to tell the spread from")
    half = t_quantile(level, df) * math.sqrt(variance)
    return Interval(max(-1.0, value - half), min(1.0, value + half))
