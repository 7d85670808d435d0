"""UnQover's metrics from a set scored chunk by chunk, in memory that does not grow with it.

Every metric of :mod:`.unqover` is a mean of per-context terms or a function of per-(subject,
attribute) and per-(pair, attribute) means of C, so it follows from sums and counts that add
up across chunks: Σ C, Σ sign(C) and n per (x1, a); Σ C and n per (x1 < x2, a); Σ and n of the
δ and ε terms; the number of contexts. The result equals the metrics of the whole table (up to
the order of floating-point additions).

A context is added once its four rows (two subject orders × two questions) have arrived: rows
whose partners are still to come wait in the accumulator, so chunks may cut contexts anywhere
(a prediction file in any key order); chunks that hold whole contexts
(``QuestionSet.iter_drawn``'s) leave nothing waiting. Rows still waiting at the end are the
error :func:`~.unqover.comparative_scores` gives for a context that lacks a row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.methods.qa.intervals.unqover import intervals
from biaslens.methods.qa.intervals.unqover_change import paired_intervals
from biaslens.methods.qa.metrics.unqover import (
    bias_from_sums,
    check_scores,
    cluster_attribute_from,
    comparative_scores,
    model_bias_from,
    subject_bias_from,
    theta4_from,
)
from biaslens.methods.qa.metrics.unqover_cells import (
    CellSums,
    Coded,
    ContextCoder,
    Contexts,
    UnitCells,
    coded_subset,
)
from biaslens.methods.qa.metrics.unqover_summary import with_intervals
from biaslens.metrics.intervals import IntervalSpec

ROWS_PER_CONTEXT = 4
"""Two subject orders × the question and its negation."""


def context_ids(scores: pd.DataFrame, within: tuple[str, ...]) -> np.ndarray:
    """One id per context (subject pair in either order, template, attribute, ``within``)."""
    return ContextCoder(within).context_of_rows(scores)[0]


class UnqoverAccumulator:
    """Add scored chunks with :meth:`add`; read the tables of a whole run with :meth:`tables`.

    ``within``: key columns that tell contexts apart but are averaged over (e.g. the
    intervention of an UnQover prediction key), as in :func:`~.unqover.model_summary`.
    ``intervals``: an :class:`~.intervals.IntervalSpec` (or (level, seed)) adds intervals over
    the crossed design of subjects × templates to the summary (:mod:`.intervals.unqover`);
    None: point values only.
    ``skip_unscored``: a complete context with a question without a score (NaN, as sampled
    scoring leaves a question no reply answers) is left out whole instead of being an
    error.

    The sums are kept per cell in arrays (:mod:`.unqover_cells`); the whole-table functions
    of :mod:`.unqover` are the reference they are tested against."""

    def __init__(
        self,
        within: tuple[str, ...] = (),
        intervals: IntervalSpec | tuple | None = None,
        skip_unscored: bool = False,
    ) -> None:
        self.within = tuple(within)
        self.intervals = IntervalSpec.of(intervals)
        self.coder = ContextCoder(self.within)
        self.units = UnitCells(self.coder) if intervals else None
        self._waiting: pd.DataFrame | None = None  # rows of contexts not yet complete
        self._seen = np.empty(0, dtype=np.uint64)  # sorted hashes of the contexts added
        self._subjects = CellSums((31, 32), "c_sum", "sign_sum", "n")  # (subject, attribute)
        self._pairs = CellSums((22, 22, 19), "c_sum", "n")  # (low, high, attribute)
        self.delta = [0.0, 0]
        self.epsilon = [0.0, 0]
        self.contexts = 0
        self.rows = 0
        self.clusters: dict[str, str] = {}
        self.skip_unscored = skip_unscored

    def add(self, scores: pd.DataFrame) -> None:
        """One chunk of scores (the columns :func:`~.unqover.comparative_scores` reads)."""
        scores, coded = self._complete_contexts(scores)
        if self.skip_unscored and not scores.empty:
            context = coded[0]
            missing = (scores["s_first"].isna() | scores["s_second"].isna()).to_numpy()
            keep = ~np.isin(context, context[missing])
            scores, coded = scores[keep], coded_subset(coded, keep)
        if scores.empty:
            return
        check_scores(scores)
        contexts = self.coder.contexts(scores, coded)
        if contexts is None:
            comparative_scores(scores, self.within)  # raises, naming the context
            raise BiaslensError("scores hold a context whose rows do not pair up")
        self._refuse_repeats(contexts)
        c = contexts.comparative()
        ones = np.ones(len(contexts))
        for subject, value in ((contexts.low, c), (contexts.high, -c)):
            cell = (subject, contexts.attribute)
            self._subjects.add(cell, c_sum=value, sign_sum=np.sign(value), n=ones)
        self._pairs.add((contexts.low, contexts.high, contexts.attribute), c_sum=c, n=ones)
        delta, epsilon = contexts.positional_terms(), contexts.attributive_terms()
        for total, terms in ((self.delta, delta), (self.epsilon, epsilon)):
            total[0] += float(terms.sum())
            total[1] += terms.size
        if self.units is not None:
            self.units.add(contexts, c, delta, epsilon)
        self.contexts += 2 * len(contexts)  # each context counts once per subject order
        self.rows += len(scores)
        if "first_cluster" in scores:
            self.clusters.update(zip(scores["first"], scores["first_cluster"], strict=True))

    def _complete_contexts(self, scores: pd.DataFrame) -> tuple[pd.DataFrame, Coded | None]:
        """The rows of contexts whose four rows have arrived, and those rows coded; the others
        wait."""
        if self._waiting is not None:
            scores = pd.concat([self._waiting, scores], ignore_index=True)
            self._waiting = None
        if scores.empty:
            return scores, None
        coded = self.coder.context_of_rows(scores)
        ids = coded[0]
        complete = np.bincount(ids)[ids] >= ROWS_PER_CONTEXT  # more: a repeat, refused later
        if complete.all():
            return scores, coded
        self._waiting = scores[~complete].reset_index(drop=True)
        return scores[complete], coded_subset(coded, complete)

    def _refuse_repeats(self, contexts: Contexts) -> None:
        """A context added in an earlier chunk is an error (8 bytes per context kept)."""
        keys = np.stack(
            [*contexts.within, contexts.template, contexts.attribute, contexts.low, contexts.high],
            axis=1,
        )
        hashes = pd.util.hash_pandas_object(pd.DataFrame(keys), index=False).to_numpy()
        if len(self._seen):
            place = np.minimum(np.searchsorted(self._seen, hashes), len(self._seen) - 1)
            again = np.flatnonzero(self._seen[place] == hashes)
            if len(again):
                raise BiaslensError(
                    f"scores hold the same context more than once: "
                    f"{self.coder.describe(contexts, again[0])} came in two chunks"
                )
        self._seen = np.sort(np.concatenate([self._seen, hashes]))

    def _check_finished(self) -> None:
        """Rows still waiting lack a partner: the error names one (or there is no data)."""
        if self._waiting is not None:
            comparative_scores(self._waiting, self.within)  # raises, naming the missing row
            raise BiaslensError(f"{len(self._waiting)} score rows lack their context's others")
        if not len(self._subjects):
            raise BiaslensError("no scores were added")

    def subject_attribute(self) -> pd.DataFrame:
        """γ(x, a), η(x, a) and n per subject and attribute (as ``subject_attribute_bias``)."""
        self._check_finished()
        sums = self._subjects.columns()
        key = sums.pop("key")
        table = pd.DataFrame(
            {
                "subject": self.coder.subjects.decode(key[:, 0]),
                "attribute": self.coder.attributes.decode(key[:, 1]),
                **sums,
            }
        )
        table["n"] = table["n"].astype(int)
        return bias_from_sums(table.sort_values(["subject", "attribute"], ignore_index=True))

    def _pair_sums(self) -> pd.DataFrame:
        sums = self._pairs.columns()
        key = sums.pop("key")
        decode = self.coder.subjects.decode
        return pd.DataFrame(
            {
                "x1": decode(key[:, 0]),
                "x2": decode(key[:, 1]),
                "attribute": self.coder.attributes.decode(key[:, 2]),
                **sums,
            }
        )

    def summary(self) -> pd.DataFrame:
        """μ, η, θ4, δ, ε and the number of contexts, one row (as ``model_summary``)."""
        levels = model_bias_from(self.subject_attribute())
        extra = pd.DataFrame(
            [
                {
                    "theta4": theta4_from(self._pair_sums()),
                    "delta": self.delta[0] / self.delta[1],
                    "epsilon": self.epsilon[0] / self.epsilon[1],
                    "contexts": self.contexts,
                }
            ]
        )
        summary = pd.concat([levels, extra], axis=1)
        if self.units is None:
            return summary

        return with_intervals(summary, self.crossed_intervals(self.clusters))

    def crossed_intervals(self, strata: dict[str, str] | None) -> dict[str, float | str | None]:
        """:func:`~.intervals.unqover.intervals` of the set added (``strata``: each subject's
        list); the accumulator must have been made with ``intervals``."""
        self._check_finished()
        return intervals(self.units, self.intervals, strata)

    def change_from(
        self, baseline: UnqoverAccumulator, strata: dict[str, str] | None, metric: str = "mu"
    ) -> dict[str, float | str | None]:
        """μ's (or η's, θ4's) change from ``baseline``'s scores to these on the same units,
        with its paired interval (:func:`~.intervals.unqover_change.paired_intervals`): another
        set of the same model, or another model on the same contexts; both made with the same
        ``intervals``."""
        self._check_finished()
        baseline._check_finished()
        return paired_intervals(self.units, baseline.units, self.intervals, strata, metric)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The run's tables: ``unqover`` (model level), ``subjects``, ``subject_attribute`` and,
        when the subjects come in several clusters, ``cluster_attribute``."""
        per = self.subject_attribute()
        subjects = subject_bias_from(per).sort_values("max_abs_gamma", ascending=False)
        tables = {
            "unqover": self.summary(),
            "subjects": subjects.reset_index(drop=True),
            "subject_attribute": per,
        }
        if len(set(self.clusters.values())) > 1:
            tables["cluster_attribute"] = cluster_attribute_from(per, self.clusters)
        return tables


def paired_change(
    scores: pd.DataFrame,
    baseline: pd.DataFrame,
    within: tuple[str, ...],
    intervals: IntervalSpec,
    strata: dict[str, str] | None,
    metric: str = "mu",
    skip_unscored: bool = False,
) -> dict[str, float | str | None]:
    """μ's (or η's, θ4's) change from the scores ``baseline`` to ``scores`` on the same units,
    with its paired interval (:meth:`UnqoverAccumulator.change_from`): ``first`` and ``second``
    (each one's plug-in), ``change``, its bounds and note, and the ``units``."""
    totals = []
    for part in (scores, baseline):
        total = UnqoverAccumulator(within, intervals=intervals, skip_unscored=skip_unscored)
        total.add(part)
        totals.append(total)
    return totals[0].change_from(totals[1], strata, metric)


def stream_tables(
    chunks,
    by: tuple[str, ...] = (),
    within: tuple[str, ...] = (),
    intervals: IntervalSpec | tuple | None = None,
) -> dict[str, pd.DataFrame]:
    """``model`` (μ, η, θ4, δ, ε, contexts), ``subjects``, ``subject_attribute`` and, for
    subjects in several clusters, ``cluster_attribute`` of a stream of score chunks: one row
    (or set of rows) per value of ``by``, as :func:`~.unqover.model_summary`,
    :func:`~.unqover.subject_bias` and :func:`~.unqover.subject_attribute_bias` give for the
    whole table, in memory that holds one chunk and the sums."""
    by = tuple(by)
    totals: dict[tuple, UnqoverAccumulator] = {}
    for chunk in chunks:
        parts = chunk.groupby(list(by), sort=False) if by else [((), chunk)]
        for value, part in parts:
            value = value if isinstance(value, tuple) else (value,)
            if value not in totals:
                totals[value] = UnqoverAccumulator((*by, *within), intervals)
            totals[value].add(part)
    if not totals:
        raise BiaslensError("no scores were added")
    clusters: dict[str, str] = {}
    parts: dict[str, list[pd.DataFrame]] = {"model": [], "subjects": [], "subject_attribute": []}
    for value in sorted(totals):
        total = totals[value]
        clusters.update(total.clusters)
        per = total.subject_attribute()
        for name, table in (
            ("model", total.summary()),
            ("subjects", subject_bias_from(per)),
            ("subject_attribute", per),
        ):
            parts[name].append(
                table.assign(**dict(zip(by, value, strict=True)))[[*by, *table.columns]]
            )
    tables = {name: pd.concat(tables, ignore_index=True) for name, tables in parts.items()}
    if len(set(clusters.values())) > 1:
        tables["cluster_attribute"] = cluster_attribute_from(
            tables["subject_attribute"], clusters, by
        )
    return tables


def intervals_by(
    scores: pd.DataFrame,
    by: str,
    within: tuple[str, ...],
    intervals: IntervalSpec,
    strata: dict[str, str] | None = None,
) -> pd.DataFrame:
    """:func:`~.intervals.unqover.intervals` of each value of ``by`` (e.g. LEI's set), one row
    each; ``within`` as :class:`UnqoverAccumulator`'s."""
    rows = []
    for value, part in scores.groupby(by, sort=True):
        totals = UnqoverAccumulator((by, *within), intervals=intervals)
        totals.add(part)
        rows.append({by: value, **totals.crossed_intervals(strata)})
    return pd.DataFrame(rows)
