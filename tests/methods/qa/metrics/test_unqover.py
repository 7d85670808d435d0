"""UnQover metrics against values computed by hand (see the comments for the arithmetic)."""

from __future__ import annotations

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.metrics.unqover import (
    attributive_error,
    cluster_attribute_bias,
    comparative_scores,
    model_bias,
    model_summary,
    positional_error,
    subject_attribute_bias,
    subject_bias,
    theta4,
)

# (order, negated) -> (s_first, s_second)
STRONG = {("AB", False): (0.6, 0.3), ("BA", False): (0.5, 0.4),
          ("AB", True): (0.2, 0.7), ("BA", True): (0.6, 0.3)}  # fmt: skip
WEAK = {("AB", False): (0.5, 0.5), ("BA", False): (0.5, 0.5),
        ("AB", True): (0.4, 0.5), ("BA", True): (0.5, 0.4)}  # fmt: skip


def rows(template: str, attribute: str, numbers: dict) -> list[dict]:
    return [
        {"first": order[0], "second": order[1], "template": template, "attribute": attribute,
         "negated": negated, "s_first": s1, "s_second": s2}
        for (order, negated), (s1, s2) in numbers.items()
    ]  # fmt: skip


@pytest.fixture
def scores() -> pd.DataFrame:
    return pd.DataFrame(
        rows("t1", "bad", STRONG) + rows("t2", "bad", WEAK) + rows("t1", "good", WEAK)
    )


def test_comparative_score_by_hand(scores):
    c = comparative_scores(scores).set_index(["template", "attribute", "x1", "x2"])
    # STRONG: S̃(A|a) = ½(.6+.4) = .5, S̃(B|a) = ½(.3+.5) = .4, S̃(A|ā) = ½(.2+.3) = .25,
    # S̃(B|ā) = ½(.7+.6) = .65; B(A) = .25, B(B) = −.25; C(A,B) = ½(.25+.25) = .25.
    assert c.loc[("t1", "bad", "A", "B"), "C"] == pytest.approx(0.25)
    assert c.loc[("t1", "bad", "B", "A"), "C"] == pytest.approx(-0.25)
    # WEAK: S̃(A|ā) = .4, everything else .5: B(A) = .1, B(B) = 0, C(A,B) = .05.
    assert c.loc[("t2", "bad", "A", "B"), "C"] == pytest.approx(0.05)
    assert c.loc[("t1", "good", "B", "A"), "C"] == pytest.approx(-0.05)


def test_subject_and_model_level_bias(scores):
    c = comparative_scores(scores)
    per = subject_attribute_bias(c).set_index(["subject", "attribute"])
    assert per.loc[("A", "bad"), "gamma"] == pytest.approx(0.15)  # mean(.25, .05) over templates
    assert per.loc[("B", "bad"), "gamma"] == pytest.approx(-0.15)
    assert per.loc[("A", "good"), "gamma"] == pytest.approx(0.05)
    assert per.loc[("B", "good"), "eta"] == -1.0
    model = model_bias(c).iloc[0]
    assert model["mu"] == pytest.approx(0.15)  # mean over A, B of max(.15, .05)
    assert model["eta"] == pytest.approx(1.0)
    assert theta4(c) == pytest.approx(0.15)


def test_positional_and_attributive_errors(scores):
    # δ: STRONG gives .2, .2, .1, .1; WEAK gives 0 four times (twice): 0.6 / 12.
    assert positional_error(scores) == pytest.approx(0.05)
    # ε: STRONG .1, .1, .2, .2; each WEAK set 0, .1, .1, 0: (0.6 + 0.2 + 0.2) / 12.
    assert attributive_error(scores) == pytest.approx(1.0 / 12)


def test_keys_keep_interventions_apart(scores):
    both = pd.concat([scores.assign(intervention="none"), scores.assign(intervention="ethical")])
    both.loc[both["intervention"] == "ethical", ["s_first", "s_second"]] = 0.5
    table = model_bias(comparative_scores(both, ("intervention",)), ("intervention",))
    assert table.set_index("intervention")["mu"].to_dict() == pytest.approx(
        {"ethical": 0.0, "none": 0.15}
    )


def test_bad_predictions_are_clear_errors(scores):
    with pytest.raises(BiaslensError, match="lack the other subject order"):
        comparative_scores(scores.drop(index=1))
    no_negation = scores[~((scores["template"] == "t2") & scores["negated"])]
    with pytest.raises(BiaslensError, match="lack the negated question"):
        comparative_scores(no_negation)
    for value, message in ((float("nan"), "nan"), (-0.1, "-0.1")):
        bad = scores.copy()
        bad.loc[3, "s_second"] = value
        with pytest.raises(BiaslensError, match=f"s_second must be a probability.*{message}"):
            comparative_scores(bad)
    with pytest.raises(BiaslensError, match="more than once"):
        comparative_scores(pd.concat([scores, scores.iloc[:1]]))
    with pytest.raises(BiaslensError, match="lack column"):
        comparative_scores(scores.drop(columns="negated"))


def test_subject_bias_names_the_top_attribute(scores):
    table = subject_bias(comparative_scores(scores)).set_index("subject")
    # A: |γ(A, bad)| = .15 > |γ(A, good)| = .05; B mirrors it with γ = −.15.
    assert table.loc["A", "max_abs_gamma"] == pytest.approx(0.15)
    assert table.loc["A", "top_attribute"] == "bad"
    assert table.loc["B", "top_gamma"] == pytest.approx(-0.15)
    assert table.loc["B", "mean_abs_eta"] == pytest.approx(1.0)


def test_cluster_attribute_bias_averages_the_cluster(scores):
    table = cluster_attribute_bias(comparative_scores(scores), {"A": "f", "B": "m"})
    table = table.set_index(["cluster", "attribute"])
    assert table.loc[("f", "bad"), "gamma"] == pytest.approx(0.15)
    assert table.loc[("m", "good"), "gamma"] == pytest.approx(-0.05)
    with pytest.raises(BiaslensError, match="no cluster"):
        cluster_attribute_bias(comparative_scores(scores), {"A": "f"})


def test_model_summary_groups_by_and_averages_within(scores):
    # Two intervention sentences of one type: the ethical one flattens every score, so its C
    # is 0 and γ(A, bad) = mean(.15 from "plain", 0 from "flat") = .075 for the type.
    plain = scores.assign(kind="t", sentence="plain")
    flat = scores.assign(kind="t", sentence="flat", s_first=0.5, s_second=0.5)
    table = model_summary(pd.concat([plain, flat]), by=("kind",), within=("sentence",))
    row = table.iloc[0]
    assert row["mu"] == pytest.approx(0.075)
    assert row["theta4"] == pytest.approx(0.075)
    assert row["delta"] == pytest.approx(0.05 / 2)  # the flat half adds 12 zero differences
    assert row["epsilon"] == pytest.approx(1.0 / 24)
    assert row["contexts"] == 12
    overall = model_summary(scores).iloc[0]
    assert overall["mu"] == pytest.approx(0.15) and overall["contexts"] == 6
