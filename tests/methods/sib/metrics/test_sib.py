"""SIB metrics against hand-computed values."""

import math

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.sib.metrics.sib import (
    fit_trend,
    mass_exact,
    mass_from_generation,
    mass_top_k,
    mean_by_w,
    method1_fits,
    slope_summary,
)


def test_mass_exact_sums_distinct_tokens_and_skips_nan():
    genders = ["female", "female", "male", "male", "neutral"]
    probs = [0.10, 0.10, 0.05, math.nan, 0.20]
    ids = [(7,), (7,), (3,), (), (9, 4)]  # "She"/"she" share token 7 in an uncased vocabulary
    assert mass_exact(genders, probs, ids) == {"female": 0.10, "male": 0.05, "neutral": 0.20}


def test_mass_top_k_is_case_insensitive_and_ignores_other_tokens():
    tokens = [" She", "he", " the", "HIS", " They", " female"]
    probs = [0.3, 0.2, 0.15, 0.1, 0.05, 0.01]
    mass = mass_top_k(tokens, probs)
    assert mass["female"] == pytest.approx(0.31)
    assert mass["male"] == pytest.approx(0.3)
    assert mass["neutral"] == pytest.approx(0.05)


def test_generation_mass_uses_the_single_pronoun_step():
    steps = [[" The", " she"], [" she", " he"], [".", " they"]]
    probs = [[0.5, 0.2], [0.6, 0.3], [0.7, 0.1]]
    # exactly one step (the second) has a pronoun as its argmax: use its top-k mass only
    assert mass_from_generation(steps, probs) == {"female": 0.6, "male": 0.3, "neutral": 0.0}


def test_generation_mass_averages_steps_when_zero_or_several_pronouns():
    steps = [[" The", " she"], [".", " they"]]
    probs = [[0.5, 0.2], [0.7, 0.1]]
    mass = mass_from_generation(steps, probs)  # no pronoun argmax: (0.2 + 0) / 2 etc.
    assert mass == {"female": pytest.approx(0.1), "male": 0.0, "neutral": pytest.approx(0.05)}
    steps = [[" he", " she"], [" she", " he"], [" x", " they"]]
    probs = [[0.4, 0.3], [0.6, 0.2], [0.5, 0.3]]
    mass = mass_from_generation(steps, probs)  # two pronoun steps: average over 3 steps
    assert mass["female"] == pytest.approx((0.3 + 0.6) / 3)
    assert mass["male"] == pytest.approx((0.4 + 0.2) / 3)
    assert mass["neutral"] == pytest.approx(0.3 / 3)
    assert mass_from_generation([], []) == {"female": 0.0, "male": 0.0, "neutral": 0.0}


def test_exact_and_top_k_agree_when_every_listed_token_is_in_the_top_k():
    tokens = ["she", "he", "they", "her", "the"]
    probs = [0.3, 0.25, 0.2, 0.1, 0.05]
    genders = ["female", "male", "neutral", "female"]
    exact = mass_exact(genders, probs[:4], [(1,), (2,), (3,), (4,)])
    assert exact == pytest.approx(mass_top_k(tokens, probs))


def test_fit_trend_hand_computed():
    # x = 0..3, y = 1, 3, 2, 4: Sxx = 5, Sxy = 4, Syy = 5 -> slope 0.8, intercept 1.3, r = 0.8;
    # SSE = 1.8, s² = 0.9, se(slope) = sqrt(0.9 / 5), t(0.975, 2) = 4.302653
    fit = fit_trend(np.arange(4), np.array([1.0, 3.0, 2.0, 4.0]))
    se = math.sqrt(0.9 / 5)
    assert fit["slope"] == pytest.approx(0.8)
    assert fit["intercept"] == pytest.approx(1.3)
    assert fit["r"] == pytest.approx(0.8)
    assert fit["r2"] == pytest.approx(0.64)
    assert fit["slope_stderr"] == pytest.approx(se)
    assert fit["slope_ci_low"] == pytest.approx(0.8 - 4.302653 * se, rel=1e-6)
    assert fit["slope_ci_high"] == pytest.approx(0.8 + 4.302653 * se, rel=1e-6)
    assert fit["n"] == 4


def test_fit_trend_needs_three_points():
    with pytest.raises(ValueError, match="at least 3"):
        fit_trend(np.arange(2), np.arange(2))


def _samples():
    rows = []
    for w_index in range(4):
        for sentence in range(2):
            rows.append(
                {
                    "prompt": "A",
                    "w_kind": "dates",
                    "w_index": w_index,
                    "w": str(1800 + w_index),
                    # female rises 1 pp per step on average, male falls 0.5 pp, neutral flat
                    "p_female": (0.01 * w_index) + (0.002 if sentence else -0.002),
                    "p_male": 0.05 - 0.005 * w_index,
                    "p_neutral": 0.02,
                }
            )
    return pd.DataFrame(rows)


def test_method1_fits_and_slope_summary_hand_computed():
    samples = _samples()
    means = mean_by_w(samples)
    assert means["p_female_pct"].tolist() == pytest.approx([0.0, 1.0, 2.0, 3.0])
    assert "p_female" not in means  # a percentage never carries a probability's name
    fits = method1_fits(samples).set_index("gender")
    assert fits.loc["female", "slope"] == pytest.approx(1.0)
    assert fits.loc["male", "slope"] == pytest.approx(-0.5)
    assert fits.loc["neutral", "slope"] == pytest.approx(0.0, abs=1e-12)
    assert fits.loc["female", "r2"] == pytest.approx(1.0)
    summary = slope_summary(method1_fits(samples)).iloc[0]
    assert summary["female_minus_male_slope"] == pytest.approx(1.5)
    assert summary["mean_r2"] == pytest.approx(1.0)


def test_a_flat_line_leaves_the_mean_r2_to_the_other_and_is_counted():
    """Female flat at 2% (no r²), male 5, 4, 4, 2 % at W = 0..3: slope −0.9, fitted 5.1, 4.2,
    3.3, 2.4, residuals −.1, −.2, .7, −.4 (SSE 0.70), SST 4.75, r² = 1 − 0.70/4.75 = 0.852632."""
    from biaslens.methods.sib.metrics.sib import r2_text

    samples = pd.DataFrame(
        {"prompt": "A", "w_kind": "dates", "w_index": w, "w": str(w),
         "p_female": 0.02, "p_male": male, "p_neutral": 0.0}
        for w, male in enumerate((0.05, 0.04, 0.04, 0.02))
    )  # fmt: skip
    summary = slope_summary(method1_fits(samples)).iloc[0]
    assert summary["mean_r2"] == pytest.approx(1 - 0.70 / 4.75)
    assert summary["flat_fits"] == 1
    assert r2_text(summary["mean_r2"], 1) == "mean r² 0.853 (1 flat line left out)"
    assert r2_text(float("nan"), 2) == "r² undefined (2 flat lines)"


def test_normalised_female_pct_and_specification_metric():
    from biaslens.methods.sib.metrics.sib import normalised_female_pct, specification_metric

    pct = normalised_female_pct([0.2, 0.0, 0.1], [0.6, 0.0, 0.1], [0.2, 0.0, 0.0])
    assert pct[0] == pytest.approx(20.0) and np.isnan(pct[1]) and pct[2] == pytest.approx(50.0)
    assert specification_metric([20.0, 50.0], [20.4, 49.0]).tolist() == pytest.approx([0.4, 1.0])


def test_detection_rates_hand_computed():
    from biaslens.methods.sib.metrics.sib import detection_rates

    metric = [0.1, 0.9, 2.0, 0.3, 0.6, 0.2]
    well_specified = [True, True, False, False, False, True]
    # unspecified: 2.0 (flagged), 0.3 (missed), 0.6 (flagged) -> TPR 2/3
    # well-specified: 0.1 (ok), 0.9 (wrongly flagged), 0.2 (ok) -> TNR 2/3
    rates = detection_rates(metric, well_specified, threshold=0.5)
    assert rates["tpr"] == pytest.approx(2 / 3) and rates["tnr"] == pytest.approx(2 / 3)
    assert rates["balanced_accuracy"] == pytest.approx(2 / 3)
    assert rates["n_unspecified"] == 3 and rates["n_well_specified"] == 3
    exactly_at = detection_rates([0.5, 0.5], [True, False], threshold=0.5)  # > threshold flags
    assert exactly_at["tnr"] == 1.0 and exactly_at["tpr"] == 0.0
    assert np.isnan(detection_rates([1.0], [False])["tnr"])


def test_detection_rates_leave_out_sentences_without_pronoun_mass():
    from biaslens.methods.sib.metrics.sib import detection_rates

    # the NaN sentences (no pronoun predicted) have no verdict: TPR = 1/1, TNR = 0/1
    # (counted wrong in both classes they would give TPR 1/2, TNR 0/2)
    rates = detection_rates([np.nan, 0.9, 2.0, np.nan], [True, True, False, False], 0.5)
    assert rates["tpr"] == 1.0 and rates["tnr"] == 0.0 and rates["balanced_accuracy"] == 0.5
    assert rates["n_no_pronoun"] == 2
    assert rates["n_unspecified"] == 2 and rates["n_well_specified"] == 2
    only_empty = detection_rates([np.nan], [True])
    assert np.isnan(only_empty["tnr"]) and only_empty["n_no_pronoun"] == 1


def test_reference_eps_share():
    from biaslens.methods.sib.metrics.sib import REFERENCE_EPS, normalised_female_pct

    pct = normalised_female_pct(
        [0.0, 0.2, 0.0005], [0.0, 0.6, 0.0005], [0.0, 0.2, 0.0], eps=REFERENCE_EPS
    )
    assert pct[0] == 0.0  # no pronoun mass: share 0, as the reference's division by total + EPS
    # inference.py stores masses in percent (p · 100) and adds EPS = 1e-5 to their sum
    assert pct[1] == pytest.approx(20.0 / (100.0 + 1e-5) * 100, rel=1e-12)
    # at a total mass of 0.001 the EPS moves a 50% share by 5e-4 pp, not by 0.5 pp
    assert pct[2] == pytest.approx(0.05 / (0.1 + 1e-5) * 100, rel=1e-12)
    assert 49.99 < pct[2] < 50.0


def test_slope_difference_standard_error_by_hand():
    """Per-W differences d = p_f − p_m = 0, 1, 1, 3 at x = 0..3: slope 0.9, residuals
    0.1, 0.2, −0.7, 0.4, s_e = sqrt(0.70 / 2), se = s_e / sqrt(Sxx = 5) = 0.264575."""
    from biaslens.methods.sib.metrics.sib import method1_fits, slope_summary

    means = pd.DataFrame(
        {
            "prompt": "A", "w_kind": "dates", "w_index": [0, 1, 2, 3],
            "p_female_pct": [10.0, 12.0, 13.0, 16.0], "p_male_pct": [10.0, 11.0, 12.0, 13.0],
            "p_neutral_pct": [1.0, 1.0, 1.0, 1.0],
        }
    )  # fmt: skip
    from biaslens.methods.sib.intervals.ols import fit_trend

    fits = pd.DataFrame(
        [
            {
                "prompt": "A",
                "w_kind": "dates",
                "gender": g,
                **fit_trend(means["w_index"], means[f"p_{g}_pct"]),
            }
            for g in ("female", "male", "neutral")
        ]
    )
    row = slope_summary(fits, means).iloc[0]
    assert row["female_minus_male_slope"] == pytest.approx(0.9)
    assert row["female_minus_male_stderr"] == pytest.approx(0.264575, abs=1e-6)
    half = 4.302653 * 0.264575  # t(0.975, 2 df)
    assert row["female_minus_male_ci_low"] == pytest.approx(0.9 - half, abs=1e-4)
    assert "female_minus_male_stderr" not in slope_summary(fits)  # without the means
    assert method1_fits is not None


def test_a_small_pronoun_mass_is_said_beside_the_numbers():
    """Masses (0.01, 0.005, 0.001) and (0.03, 0.02, 0.0): mean total (0.016 + 0.05) / 2 =
    3.3% of the probability, under 10%: a note; a model that puts 60% there gets none."""
    from biaslens.methods.sib.metrics.sib import pronoun_mass, small_mass_note

    samples = pd.DataFrame(
        {"p_female": [0.01, 0.03], "p_male": [0.005, 0.02], "p_neutral": [0.001, 0.0]}
    )
    assert pronoun_mass(samples) == pytest.approx(0.033)
    assert "3.3% of the model's probability" in small_mass_note(pronoun_mass(samples))
    assert small_mass_note(0.6) is None and small_mass_note(float("nan")) is None
