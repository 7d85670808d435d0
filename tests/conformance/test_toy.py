"""SIB's toy SCM (Appendix B) with the defaults and ``--preset paper``: the summary recomputed
from the stored samples with plain-Python correlations, and the samples checked against the
model's analytic moments."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

import biaslens


def pearson(a: list[float], b: list[float]) -> float:
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


def analytic_corr_xy(gamma: float, alpha: float) -> float:
    """X = W + γG + N, Y = γX + G + N' with W ~ N(0, α²/4), G ~ N(0, α²)."""
    var_x = alpha**2 / 4 + gamma**2 * alpha**2 + 1
    cov_xg = gamma * alpha**2
    cov_xy = gamma * var_x + cov_xg
    var_y = gamma**2 * var_x + alpha**2 + 2 * gamma * cov_xg + 1
    return cov_xy / math.sqrt(var_x * var_y)


@pytest.mark.parametrize("preset", [None, "paper"])
def test_toy_summary_recomputed(preset, tmp_path):
    result = biaslens.run("sib-toy", output=tmp_path / "run", preset=preset, report=False)
    assert result.settings["n"] == (50_000 if preset == "paper" else 100_000)
    check_toy(result)


def test_the_toy_check_fails_when_w_and_g_trade_places(tmp_path, monkeypatch):
    """W ~ N(0, α²/4) and G ~ N(0, α²) exchanged: the moments no longer match the SCM."""
    from biaslens.methods.sib import toy as sib_toy

    draw = sib_toy.sample_toy_scm
    monkeypatch.setattr(
        sib_toy, "sample_toy_scm",
        lambda *a, **k: draw(*a, **k).rename(columns={"W": "G", "G": "W"}),
    )  # fmt: skip
    result = biaslens.run("sib-toy", output=tmp_path / "run", n=20_000, report=False)
    with pytest.raises(AssertionError):
        check_toy(result)


def check_toy(result) -> None:
    n, alpha = result.settings["n"], result.settings["alpha"]
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    summary = pd.read_csv(result.run_dir / "toy_summary.csv").set_index("task")
    threshold = 2 * alpha
    p_selected = stats.norm.sf(threshold / math.sqrt(alpha**2 + alpha**2 / 4 + 1))
    for task, part in samples.groupby("task"):
        row = summary.loc[task]
        gamma = float(part["gamma"].iloc[0])
        assert len(part) == n
        chosen = part[part["S"]]
        assert row["selected_fraction"] == pytest.approx(len(chosen) / n, abs=1e-12)
        for pair, column in ((("W", "G"), "WG"), (("X", "Y"), "XY")):
            a, b = pair
            assert row[f"corr_{column}_all"] == pytest.approx(
                pearson(list(part[a]), list(part[b])), abs=1e-9
            )
            assert row[f"corr_{column}_selected"] == pytest.approx(
                pearson(list(chosen[a]), list(chosen[b])), abs=1e-9
            )
        # the samples follow the SCM: moments within 6 standard errors of the analytic ones
        assert abs(row["selected_fraction"] - p_selected) < 6 * math.sqrt(p_selected / n)
        assert abs(row["corr_WG_all"]) < 6 / math.sqrt(n)
        assert abs(row["corr_XY_all"] - analytic_corr_xy(gamma, alpha)) < 6 / math.sqrt(n)
        assert part["W"].std() == pytest.approx(alpha / 2, rel=0.02)
        assert part["G"].std() == pytest.approx(alpha, rel=0.02)
        # selection on W + G + noise makes W and G anti-correlated among the selected
        assert row["corr_WG_selected"] < -0.2
