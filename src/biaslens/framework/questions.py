"""The questions an audit answers, declared by each method in its
:class:`~biaslens.framework.hooks.AuditRole` in its paper's own terms.

A question names the one primary estimate that answers it (a headline number of the method's
run: its table, column and row), the value that answers "no" (no bias, or the value the paper
desires), and how to recompute the primary's interval at another level from the run's own
files (:attr:`Question.interval_at`), which the card's family-wise procedure needs
(:mod:`biaslens.auditing.family`). Every other headline number of the run is supporting detail
under its questions: shown with its interval, without a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IntervalAt = Callable[[Path, Mapping[str, Any], float, Mapping[str, Any]], tuple[float, float]]
"""``interval_at(run_dir, labels, level, settings)``: the primary's interval at ``level`` for
the row ``labels``, recomputed from the run in ``run_dir`` by the construction its run used
(``settings``: the run's own, from ``summary.json``; its seed included, so that at the run's
level the bounds are the run's). NaN bounds: no interval at that level."""


@dataclass(frozen=True)
class Question:
    """One question of a method's audit.

    * ``key``: a short name (``pronoun-moves-with-w``), unique within the method;
    * ``text``: the question in the paper's terms; ``{label}`` is filled from the primary's
      row (``does the pronoun move with an irrelevant {w_kind}?``);
    * ``table`` and ``metric``: the primary estimate (a headline measure of the run);
    * ``where``: labels its row must have (``{"set": "ethical"}``); ``per``: labels that make
      one question per value (``("prompt", "w_kind")``: one per prompt and W kind);
    * ``target``: the value that answers "no" (no bias, or LEI's desired μ), ``target_words``
      what it means; the verdict tests the primary against it;
    * ``source``: where the paper asks it;
    * ``interval_at``: :data:`IntervalAt` (None: the primary is reported, never judged, as a
      detector's quality is: it has no value that reads as no bias).
    """

    key: str
    text: str
    table: str
    metric: str
    target: float | None = 0.0
    target_words: str = "0 (no bias)"
    source: str = ""
    where: Mapping[str, Any] = field(default_factory=dict)
    per: tuple[str, ...] = ()
    interval_at: IntervalAt | None = None

    @property
    def judged(self) -> bool:
        """Whether the question gets a verdict (and joins the card's family of tests)."""
        return self.interval_at is not None and self.target is not None

    def primaries(self, estimates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ``summary.json`` estimates that answer this question: one per value of
        :attr:`per` among the rows :attr:`where` selects (one in all without ``per``). Two
        rows for the same value would make one question answer twice: an error naming it."""
        chosen, seen = [], {}
        for record in estimates:
            labels = record.get("labels") or {}
            if record.get("table") != self.table or record.get("metric") != self.metric:
                continue
            if all(labels.get(k) == v for k, v in self.where.items()):
                value = tuple(labels.get(k) for k in self.per)
                if value in seen:
                    from biaslens.errors import BiaslensError

                    which = ", ".join(f"{k}={v}" for k, v in zip(self.per, value, strict=True))
                    raise BiaslensError(
                        f"question {self.key!r}: {self.table}.{self.metric} has two rows "
                        f"for {which or 'the question'} ({seen[value]} and {labels}); "
                        "name the labels that tell them apart in its per"
                    )
                seen[value] = labels
                chosen.append(record)
        return chosen

    def text_for(self, labels: Mapping[str, Any]) -> str:
        """The question's text for one primary row."""
        return self.text.format_map({k: v for k, v in labels.items()})
