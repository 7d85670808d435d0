"""The card's verdicts, from hand-built ``summary.json`` estimates: a verdict is exactly as
strong as its interval, and a number marked with a caution or without an interval gets none."""

from __future__ import annotations

import pytest

from biaslens.auditing.card import rows_of, verdict_of


def estimate(**changes):
    record = {
        "table": "slopes",
        "metric": "female_minus_male_slope",
        "symbol": "female − male slope",
        "labels": {"prompt": "A", "w_kind": "dates"},
        "value": 0.02,
        "ci_low": 0.005,
        "ci_high": 0.035,
        "ci_level": 0.95,
        "interval": "t",
        "no_interval": None,
        "conservative": False,
        "estimand": "the trend",
        "caution": None,
        "n": 30,
        "n_unit": "W values",
        "small_n": False,
        "unit": "pp per W step",
        "no_bias": "0",
        "no_bias_value": 0.0,
        "includes_no_bias": False,
        "better": "closer to 0",
    }
    record.update(changes)
    return record


def test_an_interval_above_the_no_bias_value_is_evidence_and_names_its_bound():
    verdict, text = verdict_of(estimate())
    assert verdict == "bias"
    assert "lower bound 0.0050 > 0" in text and "[0.0050, 0.0350]" in text and "n = 30" in text


def test_an_interval_below_names_its_upper_bound():
    verdict, text = verdict_of(estimate(value=-0.02, ci_low=-0.035, ci_high=-0.004))
    assert verdict == "bias" and "upper bound -0.0040 < 0" in text


@pytest.mark.parametrize("low, high", [(-0.01, 0.03), (0.0, 0.03), (-0.03, 0.0)])
def test_an_interval_that_holds_the_value_is_no_evidence_never_absence(low, high):
    verdict, text = verdict_of(estimate(ci_low=low, ci_high=high))
    assert verdict == "no evidence"
    assert text.endswith("the interval includes 0")


def test_a_conservative_maximum_whose_lower_bound_is_zero_is_no_evidence():
    record = estimate(
        metric="mu", symbol="μ", value=0.12, ci_low=0.0, ci_high=0.3, conservative=True
    )
    assert verdict_of(record)[0] == "no evidence"


def test_a_caution_or_a_missing_interval_is_never_a_verdict():
    sparse = estimate(caution="sparse: 1 unit per cell")
    assert verdict_of(sparse) == ("no verdict", verdict_of(sparse)[1])
    assert "sparse: 1 unit per cell" in verdict_of(sparse)[1]
    missing = estimate(ci_low=None, ci_high=None, no_interval="every unit gives the same value")
    verdict, text = verdict_of(missing)
    assert verdict == "no verdict" and "every unit gives the same value" in text
    assert verdict_of(estimate(value=None))[0] == "no verdict"


def test_few_units_keep_the_intervals_verdict_and_say_it_is_wide():
    verdict, text = verdict_of(estimate(n=6, small_n=True))
    assert verdict == "bias" and "wide interval" in text


def test_a_number_without_a_no_bias_value_is_reported_not_judged():
    verdict, text = verdict_of(estimate(metric="tpr", symbol="TPR", no_bias_value=None,
                                        no_bias="1 (a perfect detector)"))  # fmt: skip
    assert verdict == "reported" and "1 (a perfect detector)" in text


def test_rows_name_only_the_labels_that_tell_the_runs_rows_apart():
    summary = {"estimates": [estimate(), estimate(labels={"prompt": "A", "w_kind": "places"})]}
    rows = rows_of("sib-mgc", "sib-mgc", summary, "sib-mgc", None)
    assert [r.where for r in rows] == ["W dates", "W places"]
    assert rows[0].labels == {"prompt": "A", "w_kind": "dates"}  # kept whole for matching


# ------------------------------------------------------------------ questions


def _normal_question(key="moves", target=0.0, **changes):
    """A question whose primary's interval at any level is value ± z·se (se = 0.01)."""
    from scipy import stats

    from biaslens.framework.questions import Question

    def interval_at(run_dir, labels, level, settings):
        value = settings["value"]
        half = stats.norm.ppf(0.5 + level / 2) * 0.01
        return value - half, value + half

    return Question(key, "Does it move with {w_kind}?", "slopes", "female_minus_male_slope",
                    target=target, per=("w_kind",), interval_at=interval_at, **changes)  # fmt: skip


def _primaries(values: dict[str, float], question=None, **record):
    from pathlib import Path

    from biaslens.auditing.answers import Primary

    question = question or _normal_question()
    return [
        Primary(question, estimate(labels={"prompt": "A", "w_kind": w}, value=v, **record),
                "sib-mgc", "sib-mgc", Path("."), {"value": v})
        for w, v in values.items()
    ]  # fmt: skip


def test_the_cards_questions_are_judged_as_one_family():
    """z = 2.3 alone is evidence at 95% (p .021); beside a second question (z 0.5) Holm tests
    it at 97.5% (threshold .025): still evidence; beside three others (threshold .0125): not,
    and it then states what it would have detected: (z_{1−.05/8} + z_.8) · se."""
    from biaslens.auditing.answers import answer_questions

    answers, family = answer_questions(_primaries({"dates": 0.023, "places": 0.005}))
    assert [a.answer for a in answers] == ["evidence", "no evidence"]
    assert answers[0].ci_level == pytest.approx(0.975) and "Holm" in family
    assert answers[0].question == "Does it move with dates?"
    four = {"dates": 0.023, "places": 0.005, "names": 0.0, "jobs": -0.004}
    answers, _ = answer_questions(_primaries(four))
    assert [a.answer for a in answers] == ["no evidence"] * 4
    assert answers[0].detectable == pytest.approx((2.4977 + 0.8416) * 0.01, rel=1e-3)
    assert "would detect ±0.0334" in answers[0].finding


def test_a_question_its_run_cautions_gets_no_verdict_and_still_counts():
    from biaslens.auditing.answers import answer_questions

    judged = _primaries({"dates": 0.023})
    sparse = _primaries({"places": 0.5}, caution="sparse cells")
    answers, family = answer_questions(judged + sparse)
    assert [a.answer for a in answers] == ["evidence", "no verdict"]
    assert answers[0].ci_level == pytest.approx(0.975)  # the cautioned one kept m at 2
    assert "2 judged" in family and "sparse cells" in answers[1].finding


def test_a_reported_question_is_never_judged_and_stays_out_of_the_family():
    from biaslens.auditing.answers import answer_questions
    from biaslens.framework.questions import Question

    reported = Question("separates", "How well?", "rates", "balanced_accuracy", target=None)
    answers, family = answer_questions(
        _primaries({"dates": 0.023}) + _primaries({"x": 0.6}, question=reported)
    )
    assert [a.answer for a in answers] == ["evidence", "reported"]
    assert answers[0].ci_level == pytest.approx(0.95) and "1 judged" in family


def test_a_question_answers_once_per_value_of_its_labels():
    """``per`` names what makes one question per row; two rows for the same value would make
    the question answer twice, and are refused, naming it."""
    from biaslens.errors import BiaslensError
    from biaslens.framework.questions import Question

    question = Question("q", "?", table="t", metric="m", per=("prompt",))
    rows = [
        {"table": "t", "metric": "m", "labels": {"prompt": "A", "w_kind": "dates"}},
        {"table": "t", "metric": "m", "labels": {"prompt": "B", "w_kind": "dates"}},
        {"table": "other", "metric": "m", "labels": {"prompt": "A"}},
    ]
    assert [r["labels"]["prompt"] for r in question.primaries(rows)] == ["A", "B"]
    rows.append({"table": "t", "metric": "m", "labels": {"prompt": "A", "w_kind": "places"}})
    with pytest.raises(BiaslensError, match="'q'.*two rows for prompt=A"):
        question.primaries(rows)


def test_detect_says_what_this_size_would_find_and_how_much_more_data_would():
    """A departure at or above the detectable effect is found at this size; below it, the
    interval must narrow by detectable / effect, which takes (detectable / effect)² the data."""
    from types import SimpleNamespace

    from biaslens.auditing.render import detect_lines
    from biaslens.errors import BiaslensError

    def answer(kind, detectable, kind_label):
        return SimpleNamespace(answer=kind, detectable=detectable, labels={"w_kind": kind_label},
                               step="sib-mgc", symbol="slope", unit="pp per W step")  # fmt: skip

    card = SimpleNamespace(questions=[
        answer("no evidence", 0.03, "dates"),
        answer("no evidence", 0.008, "places"),
        answer("evidence", None, "names"),
    ])  # fmt: skip
    lines = detect_lines(card, 0.01)
    assert len(lines) == 2
    assert "(dates)" in lines[0] and "needs about 9.0× this size's data" in lines[0]
    assert "(places)" in lines[1] and "would be detected at this size" in lines[1]
    with pytest.raises(BiaslensError, match="above 0"):
        detect_lines(card, 0)
