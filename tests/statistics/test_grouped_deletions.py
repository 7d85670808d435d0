"""The jackknife's deletions recomputed on the groups they touch give what recomputing every
group gives: UnQover's intervals with and without the fast path, on a complete design, one
with subjects lacking attributes and a pair lacking a template (NaN groups, groups that
appear or vanish in a deletion), and with subjects fixed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
from biaslens.metrics.intervals import IntervalSpec
from biaslens.metrics.intervals.grouped import GroupedStatistic
from tests.statistics.unqover_model import UnqoverModel


def _scores(incomplete: bool):
    scores = UnqoverModel(attributes=4, spike=0.2).scores(7, 4, np.random.default_rng(5))
    if incomplete:
        first, second = scores["first"].astype(str), scores["second"].astype(str)
        names = sorted(set(first))
        lacking = (first.isin(names[:2]) | second.isin(names[:2])) & (
            scores["attribute"].astype(str) == sorted(set(scores["attribute"].astype(str)))[0]
        )
        pair = {names[3], names[4]}
        one_pair = first.isin(pair) & second.isin(pair)
        one_template = (
            scores["template"].astype(str) == sorted(set(scores["template"].astype(str)))[1]
        )
        scores = scores[~lacking & ~(one_pair & one_template)]
    return scores


def _intervals(scores, subjects: str) -> dict:
    totals = UnqoverAccumulator(intervals=IntervalSpec(0.95, 0, subjects))
    totals.add(scores)
    return totals.summary().iloc[0].to_dict()


@pytest.mark.parametrize(("incomplete", "subjects"), [(False, "drawn"), (True, "drawn"),
                                                      (True, "fixed")])  # fmt: skip
def test_touched_groups_give_every_groups_values(monkeypatch, incomplete, subjects):
    scores = _scores(incomplete)
    fast = _intervals(scores, subjects)
    monkeypatch.delattr(GroupedStatistic, "deleted")  # every deletion reads every group
    slow = _intervals(scores, subjects)
    compared = [k for k in fast if k.endswith(("_se", "_ci_low", "_ci_high", "_crossfit"))]
    assert len(compared) >= 20
    for key in compared:
        a, b = fast[key], slow[key]
        if isinstance(b, float) and math.isnan(b):
            assert isinstance(a, float) and math.isnan(a), key
        else:
            assert a == pytest.approx(b, rel=1e-9, abs=1e-12), key
    assert any(fast[f"{m}_se"] > 0 for m in ("mu", "eta", "theta4"))
