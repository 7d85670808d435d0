"""Coverage of cid-audit's paired difference of two models' fractions rated biased, by
simulation from a model with a known truth.

One (group, λ) cell: every name of the group crossed with every name of the other group (one
prompt per name pair, as the audit decodes them). Names are draws from each group's
population: a name i of the group and a contrast name j shift both models' chance of a
biased continuation alike (u_i, v_j), and each model's own way (a_i, c_j); one shared draw per
prompt decides both verdicts (b = 1 where U_ij < p_model(i, j)), so the two models' verdicts
on a prompt go together. Every effect is bounded, so no chance leaves [0, 1] and the
difference over the names' populations is exactly base_A − base_B.

* the paired interval (:func:`paired_fraction`) covers that difference at its level, at the
  paper's 10 × 10 names and at 6 × 5;
* the two models' own intervals read side by side as a difference (half-widths combined as
  if the models were independent) cover far more than their level, and so does the paired
  interval of prompts whose pairing is broken (model B's verdicts shuffled across its
  prompts): the pairing is what the paired interval uses, and the band check sees it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.cid.metrics.cid import biased_fraction_intervals
from biaslens.methods.cid.paired_ratings import paired_fraction
from tests.statistics.coverage import BAND, REPLICATIONS, covers, record

BASE_A, BASE_B = 0.45, 0.35
TRUTH = BASE_A - BASE_B


def _cell(own_names: int, contrast_names: int, rng) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two models' rated prompts of one cell (the columns the runs' rated samples have)."""
    u = rng.uniform(-0.1, 0.1, own_names)[:, None]
    v = rng.uniform(-0.1, 0.1, contrast_names)[None, :]
    a_own, a_contrast = (
        rng.uniform(-0.07, 0.07, own_names),
        rng.uniform(-0.07, 0.07, contrast_names),
    )
    b_own, b_contrast = (
        rng.uniform(-0.07, 0.07, own_names),
        rng.uniform(-0.07, 0.07, contrast_names),
    )
    p_a = BASE_A + u + v + a_own[:, None] + a_contrast[None, :]
    p_b = BASE_B + u + v + b_own[:, None] + b_contrast[None, :]
    shared = rng.uniform(size=(own_names, contrast_names))
    i, j = np.meshgrid(np.arange(own_names), np.arange(contrast_names), indexing="ij")
    prompts = pd.DataFrame({
        "group": "g", "lam": 5.0,
        "input": [f"name{x} prompt" for x in i.ravel()],
        "contrast": [f"contrast{y} prompt" for y in j.ravel()],
        "pair": np.arange(i.size), "name": [f"n{x}" for x in i.ravel()],
        "contrast_name": [f"m{y}" for y in j.ravel()],
    })  # fmt: skip
    a = prompts.assign(biased=(shared < p_a).ravel().astype(int))
    b = prompts.assign(biased=(shared < p_b).ravel().astype(int))
    return a, b


@pytest.mark.parametrize("own, contrast", [(10, 10), (6, 5)], ids=["10 × 10 names", "6 × 5"])
def test_the_paired_difference_covers(own, contrast):
    covered, widths = [], []
    for r in range(REPLICATIONS):
        a, b = _cell(own, contrast, np.random.default_rng([515, own, r]))
        found = paired_fraction(a, b, 0.95)
        # the number itself, by hand: the mean over prompts of b_A − b_B
        assert found["difference"] == pytest.approx((a["biased"] - b["biased"]).mean())
        assert found["n"] == own * contrast
        covered.append(covers(found["ci_low"], found["ci_high"], TRUTH))
        widths.append(found["ci_high"] - found["ci_low"])
    record(f"cid-audit paired fraction, {own} × {contrast} names", covered, widths)


def test_side_by_side_or_with_the_pairing_broken_the_band_fails():
    side_by_side, broken, wide, narrow = [], [], [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng([515, 6, r])
        a, b = _cell(6, 5, rng)
        shuffled = b.assign(biased=rng.permutation(b["biased"].to_numpy()))
        unpaired = paired_fraction(a, shuffled, 0.95)
        broken.append(covers(unpaired["ci_low"], unpaired["ci_high"], TRUTH))
        found = paired_fraction(a, b, 0.95)
        narrow.append(found["ci_high"] - found["ci_low"])
        own_a, own_b = (
            biased_fraction_intervals(t, ["group", "lam"], 0.95).iloc[0] for t in (a, b)
        )
        half = np.hypot(
            *((t["fraction_ci_high"] - t["fraction_ci_low"]) / 2 for t in (own_a, own_b))
        )
        middle = a["biased"].mean() - b["biased"].mean()
        side_by_side.append(covers(middle - half, middle + half, TRUTH))
        wide.append(2 * half)
    print(
        f"side by side: coverage {np.mean(side_by_side):.3f}, mean width {np.mean(wide):.4g} "
        f"(paired {np.nanmean(narrow):.4g}); pairing broken: coverage {np.mean(broken):.3f}"
    )
    assert np.mean(side_by_side) > BAND[1] and np.mean(wide) > 1.3 * np.nanmean(narrow)
    assert np.mean(broken) > BAND[1], "a broken pairing must fail the band"
