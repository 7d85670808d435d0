"""The bias card: the questions each method's paper asks, each answered by one primary estimate
under one family-wise procedure (:mod:`biaslens.auditing.family`), then one row per headline
number of an audit's runs as supporting detail.

The rows below describe the supporting detail: each row's ``verdict`` is what its interval
allows read alone, at its run's level, and is not a finding of the card (the card's findings are
its questions'; the rendered card prints no verdict word beside a row).

A row is read from the run's own ``summary.json`` (``estimates``): the card never recomputes a
number, so it says exactly what the method's run says. The verdict is worded as strongly as
the interval allows and no stronger:

* an interval that excludes the no-bias value is evidence of bias (its direction and the bound
  that clears the value are named);
* one that includes it is *no evidence* of bias on this probe (not evidence of its absence);
* a number whose run marks it with a caution (sparse cells), or that has no interval, gets no
  verdict; one that rests on fewer than :data:`~biaslens.metrics.intervals.SMALL_N` units keeps
  the verdict of its interval (which covers at its level on such designs too, in
  ``tests/statistics/``) and says that the interval is wide;
* a number with no single no-bias value (a detector's rates, λ*) is reported, not judged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from biaslens.common import atomic
from biaslens.framework.estimates import Verdict, row_names, verdict_of
from biaslens.store.summary import Estimate

CARD_FORMAT = 2
"""2: a row is its run's estimate as written (``estimand``, not ``meaning``; every field)."""


class CardRow(Estimate):
    """One headline number of one run: its ``summary.json`` estimate as the run wrote it
    (every field of :class:`~biaslens.store.summary.Estimate`, read by the same typed model),
    with the audit step, what its interval allows read alone, and links."""

    step: str = Field(description="The audit step (method run) the number comes from.")
    method: str = Field(description="The biaslens method.")
    labels: dict[str, Any] = Field(description="Which row of the table (prompt, set, …).")
    where: str = Field(description="The labels that tell this run's rows apart, as text.")
    verdict: Verdict = Field(description="What the interval allows one to say.")
    finding: str = Field(
        description="The number, its interval and n, and what the verdict rests on (the bound "
        "that clears the no-bias value, or the reason there is no verdict)."
    )
    run: str = Field(description="The run folder, relative to the card.")
    report: str | None = Field(description="The run's HTML report, relative to the card.")
    plot: str | None = Field(
        default=None,
        description="A forest plot of the number beside the known models, relative to the card.",
    )


Answer = Literal["evidence", "no evidence", "no verdict", "reported"]
"""A question's answer: evidence (its primary's interval at the family's level excludes the
target), no evidence (it holds it: not evidence of absence; the detectable effect says what the
audit could have seen), no verdict (no primary value or interval, or a caution its run attaches),
reported (the question has no value that reads as "no": a detector's quality)."""


class QuestionAnswer(BaseModel):
    """One question of the card (:class:`~biaslens.framework.questions.Question`), answered by
    its primary estimate under the card's family-wise procedure."""

    step: str = Field(description="The audit step (method run) that answers it.")
    method: str = Field(description="The biaslens method.")
    key: str = Field(description="The question's short name within its method.")
    question: str = Field(description="The question, in its paper's terms.")
    source: str = Field(description="Where the paper asks it.")
    metric: str = Field(description="The primary estimate's column in the run's tables.")
    symbol: str = Field(description="The primary estimate's name as the papers write it.")
    labels: dict[str, Any] = Field(description="Which row of the run's table it reads.")
    value: float | None = Field(description="The primary estimate (the run's own value).")
    unit: str = Field(description="Its unit.")
    meaning: str = Field(description="What the primary estimates.")
    target: float | None = Field(description="The value that answers no (None: reported).")
    target_words: str = Field(description="What the target means.")
    answer: Answer = Field(description="What the family-wise test allows one to say.")
    ci_low: float | None = Field(description="Lower bound at the level the family tested it.")
    ci_high: float | None = Field(description="Upper bound at that level.")
    ci_level: float | None = Field(description="That level (1 − α/m at its last Holm step).")
    run_ci_low: float | None = Field(description="The run's own interval, at its level.")
    run_ci_high: float | None = Field(description="Its upper bound.")
    run_ci_level: float | None = Field(description="The run's level.")
    interval: str | None = Field(description="How the interval is built, and over what.")
    n: int | None = Field(description="The units the interval rests on.")
    n_unit: str | None = Field(description="What n counts.")
    detectable: float | None = Field(
        description="With no evidence: the smallest distance from the target the family's test "
        "detects with 80% power at this size, in the primary's unit."
    )
    caveat: str | None = Field(description="What changes how the number reads, if anything.")
    finding: str = Field(description="The answer as one sentence, with its numbers.")
    run: str = Field(description="The run folder, relative to the card.")
    report: str | None = Field(description="The run's HTML report, relative to the card.")


class LeftOut(BaseModel):
    """A method the audit did not run for this model, and why."""

    method: str
    why: str


class Failed(BaseModel):
    """A step that started and failed; the others went on."""

    step: str
    method: str
    error: str


class ReferenceRow(BaseModel):
    """A model the papers audited, computed by biaslens from its authors' released outputs."""

    model: str
    metric: str
    labels: dict[str, Any]
    value: float
    ci_low: float | None
    ci_high: float | None
    protocol: str
    source: str
    same_protocol: bool = Field(description="Whether the audited run used the same protocol.")
    why_not_same: str | None = None
    difference: float | None = Field(
        default=None,
        description="The audited model's value − this model's, paired over the items both "
        "answered (None: no paired difference).",
    )
    difference_ci_low: float | None = None
    difference_ci_high: float | None = None
    difference_note: str | None = Field(
        default=None, description="Why the paired difference has no interval, where it has none."
    )
    paired_over: str | None = Field(
        default=None, description="The shared items the paired difference rests on."
    )


class BiasCard(BaseModel):
    """``card.json``: the bias card of one model."""

    format_version: int = CARD_FORMAT
    model: str
    model_identity: dict[str, Any] = Field(default_factory=dict)
    size: str
    created: str
    questions: list[QuestionAnswer] = Field(default_factory=list)
    family: str | None = Field(
        default=None, description="The family-wise procedure the questions' answers hold under."
    )
    rows: list[CardRow] = Field(default_factory=list)
    references: list[ReferenceRow] = Field(default_factory=list)
    left_out: list[LeftOut] = Field(default_factory=list)
    failed: list[Failed] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def write_json(self, path) -> None:
        atomic.write_json(path, self.model_dump(mode="json"))


def rows_of(step: str, method: str, summary: dict[str, Any], run: str, report: str | None):
    """The card rows of one finished run (its ``summary.json``)."""
    records = summary.get("estimates") or []
    rows = []
    for record, where in zip(records, row_names(records), strict=True):
        verdict, finding = verdict_of(record, where)
        rows.append(
            CardRow.model_validate(
                {
                    **record,
                    "labels": record.get("labels") or {},
                    "step": step,
                    "method": method,
                    "where": where,
                    "verdict": verdict,
                    "finding": finding,
                    "run": run,
                    "report": report,
                }
            )
        )
    return rows


def references_of(card: BiasCard, row) -> list[ReferenceRow]:
    """The known models' values of ``row``'s number (a card row or a question's answer) on
    the same probe (metric and labels)."""
    return [r for r in card.references if r.metric == row.metric and r.labels == row.labels]


VERDICT_ORDER = {"bias": 0, "no evidence": 1, "reported": 2, "no verdict": 3}


def ordered(rows: list[CardRow]) -> list[CardRow]:
    """Evidence of bias first, then no evidence, then numbers reported without a verdict; the
    steps' order within each."""
    return sorted(rows, key=lambda r: VERDICT_ORDER[r.verdict])
