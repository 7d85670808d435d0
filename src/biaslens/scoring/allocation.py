"""Adaptive allocation of sampled replies: fewer calls for the interval of fixed K.

With fixed K every input gets K replies. The sampling part of a headline estimate's variance is
Σ a_i² σ_i² / k_i (a_i: the input's coefficient in the estimate, e.g. its W value's weight in
an OLS slope; σ_i²: the variance of one reply's value; k_i: its replies). Among allocations
with the same variance, the fewest replies go as k_i ∝ a_i σ_i (Neyman allocation, Cochran,
*Sampling Techniques*, 3rd ed., §5.5), which is what :func:`replies_per_input` does, in blocks,
with a floor (the pilot block every input gets) and a cap (:data:`CAP_TIMES` × K).

σ_i is not known. It is estimated from the pilot block of the input's *siblings* (inputs whose
reply distributions are alike: an MGC sentence at the other W values, an UnQover question's
other forms), never from the input's own replies: how many replies an input gets is then
independent of what it replied, so its frequencies stay unbiased given their count and the
intervals, which treat the sampling error as independent cell noise, hold as under fixed K
(checked by simulation in the coverage tests). Had the rule used the input's own pilot (stop
early where it looks settled), each frequency would carry the stopping rule's bias.

What the rule cannot do: with equal σ_i and equal |a_i| (UnQover's questions under one
design), Neyman allocation *is* fixed K; the saving comes from unequal leverage and variance
only. For an OLS slope over an evenly spaced grid of equal-variance cells, no unbiased
estimate of the same slope needs fewer than (Σ|c|)² / (n Σc²) of fixed K's replies (0.75 as
the grid grows; :func:`least_share`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CAP_TIMES = 2
"""No input gets more than this many times K replies (the most a run can cost, × fixed K)."""


@dataclass(frozen=True)
class SampledDesign:
    """How a method's headline estimates read each input, for :func:`replies_per_input`:
    ``weights`` a_i ≥ 0 (the input's coefficient, up to a factor per estimate), ``estimates``
    (which headline estimate each input enters: each keeps its own fixed-K variance), ``groups``
    (siblings: inputs with alike reply distributions) and ``variance(i, replies)``: one reply's
    variance for input i, estimated (smoothed) from ``replies``."""

    weights: np.ndarray
    estimates: np.ndarray
    groups: np.ndarray
    variance: object

    def __post_init__(self) -> None:
        n = len(self.weights)
        if len(self.estimates) != n or len(self.groups) != n:
            raise ValueError("weights, estimates and groups must have one entry per input")
        if not np.all(np.isfinite(self.weights)) or np.any(np.asarray(self.weights) < 0):
            raise ValueError("weights must be finite and non-negative")


def sibling_variances(groups: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Each input's σ² as the mean of its siblings' (same group, itself left out); an input
    alone in its group takes the mean of all other inputs'."""
    groups = np.asarray(groups)
    own = np.asarray(own, dtype=float)
    codes, inverse = np.unique(groups, return_inverse=True)
    sums = np.bincount(inverse, weights=own, minlength=len(codes))
    counts = np.bincount(inverse, minlength=len(codes))
    others = counts[inverse] - 1
    result = np.empty(len(own))
    alone = others == 0
    result[~alone] = (sums[inverse][~alone] - own[~alone]) / others[~alone]
    if alone.any():
        total, n = own.sum(), len(own)
        result[alone] = (total - own[alone]) / (n - 1) if n > 1 else 1.0
    return result


def replies_per_input(
    weights: np.ndarray,
    variances: np.ndarray,
    estimates: np.ndarray,
    samples: int,
    block: int,
    cap_times: int = CAP_TIMES,
) -> np.ndarray:
    """Replies per input (multiples of ``block``, from one block to ``cap_times`` × K): per
    estimate, the fewest blocks whose Σ a_i² σ_i² / k_i is at most fixed K's Σ a_i² σ_i² / K.
    Blocks go where they cut the variance most (marginal allocation, which is optimal for this
    separable convex problem and is Neyman's k ∝ aσ in whole blocks): every block whose cut
    c·b / (k (k + b)) is at least a threshold τ is taken, τ the largest that reaches fixed K's
    variance. Inputs of weight 0 get the floor; an estimate whose weights or variances are all
    0 gets K everywhere (nothing to allocate by)."""
    weights, variances = np.asarray(weights, float), np.asarray(variances, float)
    cap = max(block, -(-cap_times * samples // block) * block)
    most = (cap - block) // block  # blocks beyond the pilot
    result = np.full(len(weights), -(-samples // block) * block)
    for estimate in np.unique(estimates):
        part = np.flatnonzero(np.asarray(estimates) == estimate)
        c = weights[part] ** 2 * variances[part]
        target = c.sum() / samples * (1 + 1e-9)  # fixed K's, less the sums' rounding
        if not target > 0:
            continue

        def allocation(tau: float, c=c) -> np.ndarray:
            # the block from k to k + b is taken iff k (k + b) <= c b / tau
            k_top = (np.sqrt(block**2 + 4 * c * block / tau) - block) / 2
            added = np.clip(np.floor((k_top - block) / block) + 1, 0, most)
            return block * (1 + added)

        # at τ = e^low every input of c > 0 gets its cap; at e^high none gets a block more
        low, high = np.log(c[c > 0].min() / (4 * cap**2)) - 1, np.log(c.max() * block) + 1
        for _ in range(100):  # bisection on log τ: the variance falls as τ falls
            middle = (low + high) / 2
            if (c / allocation(np.exp(middle))).sum() > target:
                high = middle
            else:
                low = middle
        result[part] = allocation(np.exp(low))
    return result.astype(int)


def least_share(grid: Sequence[float]) -> float:
    """The least share of fixed K's replies with which any unbiased estimate of the OLS slope
    over ``grid`` (equal-variance cells) keeps fixed K's variance: (Σ|c|)² / (n Σc²), c the
    centred grid (Neyman allocation's optimum)."""
    c = np.asarray(grid, float) - np.mean(grid)
    return neyman_share(np.abs(c), np.ones(len(c)))


def neyman_share(weights: np.ndarray, variances: np.ndarray) -> float:
    """The least share of fixed K's replies that keeps one estimate's sampling variance
    Σ a_i² σ_i² / k_i at fixed K's, were every σ_i known and k_i any positive number:
    (Σ a_i σ_i)² / (n Σ a_i² σ_i²), at k_i ∝ a_i σ_i (Cochran §5.5). No allocation rule does
    better on that estimate; a pilot floor, whole blocks and estimated σ_i only add to it."""
    spread = np.asarray(weights, float) * np.sqrt(np.asarray(variances, float))
    return float(spread.sum() ** 2 / (len(spread) * (spread**2).sum()))


@dataclass(frozen=True)
class Spent:
    """What an adaptive draw spent: ``calls`` (requests of one block), those fixed K would
    have made, the most the rule could have made, and the replies per input (least, most)."""

    calls: int
    fixed_calls: int
    most_calls: int
    least_replies: int
    most_replies: int

    def text(self, samples: int) -> str:
        share = self.calls / self.fixed_calls if self.fixed_calls else float("nan")
        return (
            f"adaptive allocation matched to K = {samples}: {self.calls:,} calls against fixed "
            f"K's {self.fixed_calls:,} ({share:.0%}), {self.least_replies}–{self.most_replies} "
            "replies per input (by its weight in the estimate and its siblings' pilot "
            "replies, never its own)"
        )
