"""The toy SCM's statistical properties with a fixed seed (paper Appendix B, Fig. 2)."""

import json

import numpy as np
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.sib.data.toy_scm import sample_toy_scm
from biaslens.methods.sib.metrics.toy_scm import selection_probability, toy_summary
from biaslens.methods.sib.toy import make_settings
from tests.helpers import run_toy


def test_analytic_selection_probability():
    # sd(W + G + N) = sqrt(100 + 25 + 1); P(Z > 20 / 11.2250) = P(Z > 1.78174) = 0.03740
    assert selection_probability(10.0) == pytest.approx(0.03740, abs=2e-5)


def test_equations_hold_row_by_row():
    sample = sample_toy_scm(1000, gamma=1.0, seed=3)
    assert sample["S"].dtype == bool
    # with γ = 1 and the noise removed, Y - X - G and X - W - G are pure N(0, 1) noise
    assert np.std(sample["Y"] - sample["X"] - sample["G"]) == pytest.approx(1.0, abs=0.1)
    assert np.std(sample["X"] - sample["W"] - sample["G"]) == pytest.approx(1.0, abs=0.1)
    assert np.std(sample["G"]) == pytest.approx(10.0, rel=0.1)
    assert np.std(sample["W"]) == pytest.approx(5.0, rel=0.1)
    assert sample.equals(sample_toy_scm(1000, gamma=1.0, seed=3))


def test_selection_effects_with_fixed_seed():
    unspecified = toy_summary(sample_toy_scm(200_000, gamma=0.0, seed=0))
    specified = toy_summary(sample_toy_scm(200_000, gamma=1.0, seed=1))
    for summary in (unspecified, specified):
        # selection keeps ~3.7% and makes the independent W and G negatively correlated
        assert summary["selected_fraction"] == pytest.approx(selection_probability(10.0), abs=0.002)
        assert abs(summary["corr_WG_all"]) < 0.01
        assert summary["corr_WG_selected"] < -0.5
    # unspecified: X and Y are independent overall, but correlated after selection,
    # tracking W–G (X ≈ W, Y ≈ G)
    assert abs(unspecified["corr_XY_all"]) < 0.01
    assert unspecified["corr_XY_selected"] < -0.5
    assert unspecified["corr_XY_selected"] == pytest.approx(
        unspecified["corr_WG_selected"], abs=0.05
    )
    # well-specified: X–Y stays strongly positive, largely unaffected by selection
    assert specified["corr_XY_all"] > 0.9
    assert specified["corr_XY_selected"] > 0.5


def test_run_toy_writes_a_run_directory(tmp_path):
    result = run_toy(make_settings(n=5000, seed=2), tmp_path)
    assert list(result.toy_summary["task"]) == ["well-specified", "unspecified"]
    assert (tmp_path / "plots" / "toy_scm.png").is_file()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["metrics"]["analytic_selected_fraction"] == pytest.approx(0.0374, abs=1e-4)
    assert len(summary["metrics"]["tasks"]) == 2


def test_toy_bad_input():
    with pytest.raises(BiaslensError, match="invalid n"):
        make_settings(n=5)
    with pytest.raises(BiaslensError, match="invalid alpha"):
        make_settings(alpha=0)
    with pytest.raises(BiaslensError, match="n must be >= 1"):
        sample_toy_scm(0, gamma=1.0)
