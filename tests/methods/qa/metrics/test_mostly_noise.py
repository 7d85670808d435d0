"""A plug-in maximum whose cross-fitted value is below half of it is marked "mostly noise" in
every view: the rule (more than half of the plug-in is the upward bias of a maximum over noisy
means), the run's estimates, its verdict's sentence, UnQover's terminal table and compare."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from biaslens.framework.estimates import collect, verdict_of
from biaslens.framework.registry import get_method
from biaslens.methods.qa.metrics.unqover_summary import summary_lines
from biaslens.report.runs_frame import comparison_table


def _rule(plugin: float, crossfit: float) -> bool:
    """Written again from the docs: below half the plug-in (and a plug-in above 0)."""
    return plugin > 0 and crossfit < 0.5 * plugin


def _row(mu: float, mu_crossfit: float) -> dict:
    row = {"mu": mu, "mu_crossfit": mu_crossfit, "mu_ci_low": 0.0, "mu_ci_high": 0.77,
           "units": 12, "cell_units": 6.0, "caution": ""}  # fmt: skip
    for name in ("eta", "theta4", "delta", "epsilon"):
        row.update({name: 0.1, f"{name}_ci_low": 0.0, f"{name}_ci_high": 0.3})
    row.update({"eta_crossfit": 0.09, "theta4_crossfit": 0.08})
    return row


@pytest.mark.parametrize(
    ("plugin", "crossfit"), [(0.60, 0.22), (0.60, 0.31), (0.1457, 0.0639), (0.2, 0.0), (0.0, 0.0)]
)
def test_the_rule_and_every_view(plugin, crossfit):
    from biaslens.metrics.meanings import mostly_noise

    expected = _rule(plugin, crossfit)
    assert mostly_noise(plugin, crossfit) is expected
    spec = get_method("unqover")
    table = pd.DataFrame([_row(plugin, crossfit)])
    mu = next(e for e in collect(spec, {"unqover": table}) if e["metric"] == "mu")
    assert mu["mostly_noise"] is expected and mu["crossfit"] == pytest.approx(crossfit)
    verdict, text = verdict_of(mu)
    assert ("plug-in mostly noise" in text) is expected
    assert verdict in ("no evidence", "bias")  # a display flag, never a verdict of its own
    shown = summary_lines(table.iloc[0]).set_index("metric").loc["μ", "value"]
    assert ("(mostly noise)" in shown) is expected
    frame = pd.DataFrame([{**{k: mu.get(k) for k in ("value", "ci_low", "ci_high", "n",
                                                     "caution", "mostly_noise")},
                           "method": "unqover", "symbol": "μ", "labels": "", "run": "r",
                           "model": "m"}])  # fmt: skip
    assert ("(mostly noise)" in comparison_table(frame).to_string()) is expected


def test_no_cross_fitted_value_is_no_flag():
    from biaslens.metrics.meanings import mostly_noise

    assert not mostly_noise(0.6, None) and not mostly_noise(0.6, math.nan)
    assert not mostly_noise(None, 0.1)
