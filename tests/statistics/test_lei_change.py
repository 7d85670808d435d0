"""LEI's paired change of μ (μ under an intervention − μ with none, over the same contexts) at
the audit's quick and standard designs, by simulation from :mod:`tests.statistics.lei_model`.

The model's preferences with no intervention are b(x, a); under ethical advice they become
``shrink`` · b(x, a) (1: the advice changes nothing; 0.5: it halves every preference), with the
same template effects in both sets (the same contexts, paired). The truth is each set's μ from
its own b by the definition (:func:`~tests.statistics.lei_model.truth`), and the change their
difference. The interval is :func:`biaslens.methods.qa.lei_eval.table.change_table`'s,
conservative by construction: coverage at least 0.92; where the advice changes nothing its upper
bound falls below 0 (the card's evidence that the advice lowers μ) in at most 5% of runs, and
where it halves a clear bias in at least 90% of runs at the standard design (at the quick one
in about 40%: the card states its detectable change instead).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.qa.lei_eval.table import change_table
from biaslens.metrics.intervals import IntervalSpec
from tests.statistics.coverage import REPLICATIONS, record, replicate
from tests.statistics.lei_model import codes, rows, scores, truth

SETS = ("none", "ethical")
POWER = 0.90  # at the standard design: halving a clear bias is found (upper bound below 0)


def _replication(size: str, shrink: float, r: int) -> dict:
    contexts = rows(size, SETS)
    rng = np.random.default_rng([r, int(shrink * 100)])
    subjects, templates, attributes = codes(contexts)[4]
    b = rng.normal(0, 0.08, (subjects, attributes))
    u = rng.normal(0, 0.02, (subjects, templates, attributes))
    simulated, truths = [], {}
    for name, factor in (("none", 1.0), ("ethical", shrink)):
        part = contexts["set"] == name
        mine = scores(contexts, factor * b, rng, u=factor * u)
        simulated.append(mine[np.tile(part.to_numpy(), 2)])
        truths.update({k: v for k, v in truth(contexts, factor * b).items() if k == name})
    # μ with no intervention on the ethical set's contexts: those rows relabelled, so that b
    # is read with the codes of all the rows
    context = ["first", "second", "template", "attribute"]
    ethical = contexts.loc[contexts["set"] == "ethical", context].drop_duplicates()
    shared = contexts[context].merge(ethical, how="left", indicator=True)["_merge"] == "both"
    relabelled = contexts.assign(set=np.where((contexts["set"] == "none") & shared, "same", "-"))
    change = truths["ethical"] - truth(relabelled, b)["same"]
    table = change_table(pd.concat(simulated), IntervalSpec(0.95, r, "fixed"))
    row = table.set_index("set").loc["ethical"]
    low, high = row["mu_change_ci_low"], row["mu_change_ci_high"]
    return {"change": (bool(low <= change <= high), high - low), "below": (bool(high < 0), 0.0)}


@pytest.mark.slow
@pytest.mark.parametrize("size", ["quick", "standard"])
@pytest.mark.parametrize("shrink", [1.0, 0.5])
def test_the_paired_change_holds_at_the_audits_designs(size, shrink, full_data):
    rows(size, SETS)
    results = replicate(partial(_replication, size, shrink), REPLICATIONS)
    covered, widths = results["change"]
    what = "changes nothing" if shrink == 1 else "halves every preference"
    record(f"LEI μ change, {size} design, advice {what}", covered, widths, conservative=True)
    found = float(np.mean(results["below"][0]))
    print(f"  upper bound < 0 in {found:.3f} of runs")
    if shrink == 1:
        assert found <= 0.05  # no false evidence that the advice lowers μ
    elif size == "standard":  # the quick design states what it would detect instead
        assert found >= POWER
