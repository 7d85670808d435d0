"""UnQover's metrics from a set scored chunk by chunk, in memory that does not grow with it.

Every metric of :mod:`.unqover` is a mean of per-context terms or a function of per-(subject,
attribute) and per-(pair, attribute) means of C, so it follows from sums and counts that add
up across chunks: Σ C, Σ sign(C) and n per (x1, a); Σ C and n per (x1 < x2, a); Σ and n of the
δ and ε terms; the number of contexts. A chunk must hold both subject orders and both
questions of each of its contexts (``QuestionSet.iter_drawn`` yields such chunks); the result
then equals the metrics of the whole table (up to the order of floating-point additions).
"""

from __future__ import annotations

import pandas as pd

from biaslens.metrics.unqover import (
    attributive_differences,
    bias_from_sums,
    cluster_attribute_from,
    comparative_scores,
    model_bias_from,
    pair_attribute_sums,
    positional_differences,
    subject_attribute_sums,
    subject_bias_from,
    theta4_from,
)


def _add(total: pd.DataFrame | None, part: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    part = part.set_index(keys)
    return part if total is None else total.add(part, fill_value=0)


class UnqoverAccumulator:
    """Add scored chunks with :meth:`add`; read the tables of a whole run with :meth:`tables`."""

    def __init__(self) -> None:
        self._subjects: pd.DataFrame | None = None  # (subject, attribute) -> c_sum, sign_sum, n
        self._pairs: pd.DataFrame | None = None  # (x1, x2, attribute) -> c_sum, n
        self.delta = [0.0, 0]
        self.epsilon = [0.0, 0]
        self.contexts = 0
        self.rows = 0
        self.clusters: dict[str, str] = {}

    def add(self, scores: pd.DataFrame) -> None:
        """One chunk of scores (the columns :func:`~.unqover.comparative_scores` reads)."""
        if scores.empty:
            return
        comparative = comparative_scores(scores)
        sums = subject_attribute_sums(comparative)
        self._subjects = _add(self._subjects, sums, ["subject", "attribute"])
        self._pairs = _add(self._pairs, pair_attribute_sums(comparative), ["x1", "x2", "attribute"])
        for total, terms in (
            (self.delta, positional_differences(scores)),
            (self.epsilon, attributive_differences(scores)),
        ):
            total[0] += float(terms.sum())
            total[1] += len(terms)
        self.contexts += int((~scores["negated"].astype(bool)).sum())
        self.rows += len(scores)
        self.clusters.update(zip(scores["first"], scores["first_cluster"], strict=True))

    def subject_attribute(self) -> pd.DataFrame:
        """γ(x, a), η(x, a) and n per subject and attribute (as ``subject_attribute_bias``)."""
        sums = self._subjects.reset_index()
        sums["n"] = sums["n"].astype(int)
        return bias_from_sums(sums.sort_values(["subject", "attribute"], ignore_index=True))

    def summary(self) -> pd.DataFrame:
        """μ, η, θ4, δ, ε and the number of contexts, one row (as ``model_summary``)."""
        levels = model_bias_from(self.subject_attribute())
        pairs = self._pairs.reset_index()
        extra = pd.DataFrame(
            [
                {
                    "theta4": theta4_from(pairs),
                    "delta": self.delta[0] / self.delta[1],
                    "epsilon": self.epsilon[0] / self.epsilon[1],
                    "contexts": self.contexts,
                }
            ]
        )
        return pd.concat([levels, extra], axis=1)

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
