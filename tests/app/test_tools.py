"""The app's tools as functions, on tiny masked and causal models."""

from __future__ import annotations

import pytest

from biaslens.app import tools
from biaslens.errors import BiaslensError
from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.metrics.sib import normalised_female_pct
from biaslens.models.requests import GenerateRequest


@pytest.mark.parametrize("name", ["bert-mlm", "llama"])
def test_detector_sweeps_dates_and_applies_method_2(tiny_backends, name):
    lm = tiny_backends[name]
    progress = []
    result = tools.detect(
        lm, "The nurse said that [MASK] was tired.", progress=lambda d, t: progress.append((d, t))
    )
    rows = {r["value"]: r for r in result["rows"]}
    assert list(rows) == list(tools.DETECTOR_DATES) and 1901 in rows and 2016 in rows
    assert rows[1901]["sentence"] == "In 1901, the nurse said that [MASK] was tired."
    share = {
        d: float(normalised_female_pct(r["p_female"], r["p_male"], r["p_neutral"]))
        for d, r in rows.items()
    }
    assert result["metric"] == pytest.approx(abs(share[2016] - share[1901]))
    expected = "unspecified" if result["metric"] > 0.5 else "well-specified"
    assert result["verdict"] == expected
    assert progress and progress[-1][0] == progress[-1][1] == len(tools.DETECTOR_DATES)


def test_dose_response_sweeps_the_slot(tiny_backends):
    lm = tiny_backends["llama"]
    result = tools.dose_response(lm, "In [PLACE], [MASK] became a doctor.")
    assert [r["value"] for r in result["rows"]] == list(mgc.PLACES)
    custom = tools.dose_response(lm, "In [DATE], [MASK] was a nurse.", ["1900", " 2000 ", ""])
    assert [r["value"] for r in custom["rows"]] == ["1900", "2000"]
    assert custom["rows"][1]["sentence"] == "In 2000, [MASK] was a nurse."


def test_cid_pair_contrasts_both_ways(tiny_backends):
    lm = tiny_backends["llama"]
    out = tools.cid_pair(lm, "the doctor said", "the nurse said", 5.0, max_new_tokens=4)
    assert out["x"] == "the doctor said" and isinstance(out["cid_x_prime"], str)
    greedy = lm.generate([GenerateRequest("the doctor said", 4, 1, stop=(".", "\n"))])[0]
    assert tools.cid_pair(lm, "the doctor said", "the nurse said", 0.0, 4)["cid_x"] == greedy.text


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda lm: tools.detect(lm, "no slot here"), r"exactly one \[MASK\]"),
        (lambda lm: tools.detect(lm, "[MASK] and [MASK]"), r"exactly one \[MASK\]"),
        (lambda lm: tools.dose_response(lm, "[MASK] was born."), r"one \[DATE\] or one \[PLACE\]"),
        (lambda lm: tools.dose_response(lm, "In [DATE] [PLACE], [MASK] was."), "one"),
        (lambda lm: tools.cid_pair(lm, "", "b", 1.0), "x is empty"),
        (lambda lm: tools.cid_pair(lm, "a", "b", -1.0), "λ must be between"),
        (lambda lm: tools.detect(lm, "x " * 300 + "[MASK]"), "longer than"),
    ],
)
def test_bad_input_is_a_clear_error(tiny_backends, call, message):
    with pytest.raises(BiaslensError, match=message):
        call(tiny_backends["llama"])


def test_extractive_models_cannot_fill_pronouns(tiny_backends):
    with pytest.raises(BiaslensError, match="extractive-QA model"):
        tools.detect(tiny_backends["roberta-qa"], "The nurse said that [MASK] was tired.")


@pytest.mark.slow
def test_tools_on_the_default_model():
    from biaslens.models import BackendConfig, load_model

    lm = load_model("default", BackendConfig(device="cpu"))
    result = tools.detect(lm, "The nurse said that [MASK] was tired.")
    assert result["verdict"] in ("unspecified", "well-specified") and len(result["rows"]) == 24
    assert all(0 < r["p_female"] + r["p_male"] + r["p_neutral"] < 1 for r in result["rows"])
    pair = tools.cid_pair(lm, "John failed because he", "Ahmed failed because he", 5.0, 8)
    assert pair["cid_x"] and pair["cid_x_prime"]
