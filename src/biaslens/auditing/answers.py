"""The card's questions answered: each method's questions matched to its run's primary
estimates, the judged ones tested as one family (:func:`~biaslens.auditing.family.holm`), and
each answer worded as strongly as its test allows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biaslens.auditing.card import QuestionAnswer
from biaslens.auditing.family import FamilyTest, detectable_effect, holm, procedure
from biaslens.common.numbers import readable, readable_interval
from biaslens.framework.questions import Question
from biaslens.metrics.intervals.core import LEVEL


@dataclass
class Primary:
    """One question's primary estimate in one finished run: the ``summary.json`` estimate,
    the run's folder and settings, and the step that ran it."""

    question: Question
    record: dict[str, Any]
    step: str
    method: str
    run_dir: Path
    settings: dict[str, Any]
    report: str | None = None

    def interval(self, level: float) -> tuple[float, float]:
        assert self.question.interval_at is not None
        labels = self.record.get("labels") or {}
        return self.question.interval_at(self.run_dir, labels, level, self.settings)


def primaries_of(
    questions, step: str, method: str, summary: dict[str, Any], run_dir: Path, report: str | None
) -> list[Primary]:
    """The primaries of ``questions`` among one run's estimates."""
    estimates = summary.get("estimates") or []
    settings = summary.get("settings") or {}
    return [
        Primary(q, record, step, method, run_dir, settings, report)
        for q in questions
        for record in q.primaries(estimates)
    ]


def _why_not_judged(record: dict[str, Any]) -> str | None:
    if record.get("value") is None:
        return f"no value ({record.get('no_interval') or 'not computed'})"
    if record.get("caution"):
        return record["caution"]
    if record.get("ci_low") is None or record.get("ci_high") is None:
        return record.get("no_interval") or "no interval"
    return None


def _short(text: str | None, limit: int = 120) -> str:
    """A reason cut to its first clause (the whole text stays in the answer's caveat)."""
    text = (text or "").split(": their ", 1)[0].split("; ", 1)[0]
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def _shown(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{readable(value)} {unit}".strip()


def answer_questions(
    primaries: list[Primary], alpha: float = 1 - LEVEL
) -> tuple[list[QuestionAnswer], str | None]:
    """Every primary's answer, and the family-wise procedure's sentence (None: nothing
    judged). A judged question whose primary cannot be tested (no value, no interval, a
    caution) answers "no verdict" and still counts in the family."""
    family = sum(p.question.judged for p in primaries)
    tests = {
        id(p): FamilyTest(p.question.target, p.interval)
        for p in primaries
        if p.question.judged and _why_not_judged(p.record) is None
    }
    holm(list(tests.values()), alpha, untestable=family - len(tests))
    answers = [_answer(p, tests.get(id(p)), family, alpha) for p in primaries]
    return answers, (procedure(family, alpha) if family else None)


def _answer(primary: Primary, test: FamilyTest | None, family: int, alpha: float) -> QuestionAnswer:
    question, record = primary.question, primary.record
    labels = record.get("labels") or {}
    unit = record.get("unit") or ""
    value = record.get("value")
    low = high = level = detectable = None
    caveat = record.get("caution") if question.judged else None
    if record.get("mostly_noise"):
        caveat = (
            f"the plug-in {record['symbol']} is mostly noise (cross-fitted "
            f"{readable(record['crossfit'])}); the interval's lower bound is cross-fitted"
        )
    head = f"{record['symbol']} = {_shown(value, unit)}"
    if not question.judged:
        answer = "reported"
        low, high, level = record.get("ci_low"), record.get("ci_high"), record.get("ci_level")
        shown = (
            f"{level or LEVEL:.0%} CI {readable_interval(low, high)}"
            if low is not None
            else ("no interval")
        )
        finding = f"{head} ({shown}); {question.target_words}"
    elif test is None:
        answer = "no verdict"
        finding = f"{head}: no verdict — {_short(_why_not_judged(record))}"
    else:
        low, high, level = test.low, test.high, test.level
        shown = f"{level:.2%} CI {readable_interval(low, high)}, family-wise"
        if test.rejected:
            answer = "evidence"
            side = "above" if low > test.target else "below"
            finding = f"{head} ({shown}): evidence, {side} {test.target:g}"
        else:
            answer = "no evidence"
            first_low, first_high = test.at(1 - alpha / family)
            detectable = detectable_effect(first_low, first_high, family, alpha)
            finding = f"{head} ({shown}): no evidence; the audit would detect ±" + (
                f"{readable(detectable)} {unit}".strip() + " from " + f"{test.target:g}"
                if detectable is not None
                else "—"
            )
    return QuestionAnswer(
        step=primary.step,
        method=primary.method,
        key=question.key,
        question=question.text_for(labels),
        source=question.source,
        metric=record["metric"],
        symbol=record["symbol"],
        labels=labels,
        value=value,
        unit=unit,
        meaning=record.get("estimand") or "",
        target=question.target,
        target_words=question.target_words,
        answer=answer,
        ci_low=low,
        ci_high=high,
        ci_level=level,
        run_ci_low=record.get("ci_low"),
        run_ci_high=record.get("ci_high"),
        run_ci_level=record.get("ci_level"),
        interval=record.get("interval"),
        n=record.get("n"),
        n_unit=record.get("n_unit"),
        detectable=detectable,
        caveat=caveat,
        finding=finding,
        run=primary.step,
        report=primary.report,
    )
