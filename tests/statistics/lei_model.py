"""LEI's sets at the audit's own designs, scored by a model with known subject preferences.

The contexts are the audit's own (:func:`rows`): a lei-eval step's settings at a ``--size``,
drawn from the public LEI religion split as the run draws them. The scores (:func:`scores`)
follow the form of :mod:`tests.statistics.unqover_model`: subject x (question q = +1, its
negation q = −1) scores

    S = 0.5 + q · (b(x, a) + u(x, τ, a)) / 2 + π · [x is named first] + e,

with template effects u (sd 0.02), position π = 0.05 and noise e (sd 0.03). The religions are
the population asked about (subjects fixed), so the truth (:func:`truth`) is μ of these
subjects over the population of templates: u and e average to 0, π cancels between a question
and its negation, γ(x, a) is the mean over the set's contexts naming x first of
(b(x, a) − b(partner, a)) / 2, weighted as the set holds them, and μ = mean over subjects of
max over attributes of |γ(x, a)| (UnQover §3, written here from the definition, not taken
from biaslens).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd

SETS = ("ethical", "adversarial")  # the sets of the card's two LEI questions


@cache
def rows(size: str, sets: tuple[str, ...] = SETS) -> pd.DataFrame:
    """The contexts of ``sets`` in the audit's lei-eval step at ``size``."""
    from biaslens.methods.qa.lei_eval.method import build_rows
    from biaslens.methods.qa.lei_eval.settings import AUDIT, make_settings
    from tests.conftest import full_data_dir

    (step,) = AUDIT.sizes[size]
    drawn, _ = build_rows(make_settings(**step.settings), full_data_dir() / "lei")
    drawn = drawn[drawn["set"].isin(sets)].reset_index(drop=True)
    return drawn[["set", "intervention_id", "first", "second", "template", "attribute"]]


def codes(rows: pd.DataFrame):
    """Each context's subjects, attribute and template as indices, and how many of each."""
    first, second = rows["first"].to_numpy(str), rows["second"].to_numpy(str)
    subjects = np.unique(np.concatenate([first, second]))
    attributes, a = np.unique(rows["attribute"].to_numpy(str), return_inverse=True)
    templates, t = np.unique(rows["template"].to_numpy(), return_inverse=True)
    x1, x2 = np.searchsorted(subjects, first), np.searchsorted(subjects, second)
    return x1, x2, a, t, (len(subjects), len(templates), len(attributes))


def scores(
    rows: pd.DataFrame, b: np.ndarray, rng, noise: float = 0.03, position: float = 0.05,
    u: np.ndarray | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Both questions of every context, scored by the model above (template effects u of sd
    ``noise`` · 2/3 unless given; ``noise`` 0: exact scores, 0.5 ± b(x, a)/2 + π). ``b`` and
    ``u`` are indexed by :func:`codes` of ``rows``."""
    x1, x2, a, t, (subjects, templates, attributes) = codes(rows)
    if u is None:
        u = rng.normal(0, noise * 2 / 3, (subjects, templates, attributes))
    parts = []
    for q in (1, -1):
        e = rng.normal(0, noise, (2, len(rows)))
        parts.append(rows.assign(
            negated=q < 0,
            s_first=0.5 + q * (b[x1, a] + u[x1, t, a]) / 2 + position + e[0],
            s_second=0.5 + q * (b[x2, a] + u[x2, t, a]) / 2 + e[1],
        ))  # fmt: skip
    return pd.concat(parts, ignore_index=True)


def truth(rows: pd.DataFrame, b: np.ndarray) -> dict[str, float]:
    """μ of each set by its definition, from b alone."""
    x1, x2, a, _, _ = codes(rows)
    c = pd.DataFrame({"set": rows["set"], "x": x1, "a": a, "c": (b[x1, a] - b[x2, a]) / 2})
    gamma = c.groupby(["set", "x", "a"])["c"].mean().abs()
    return gamma.groupby(level=["set", "x"]).max().groupby(level="set").mean().to_dict()


def saturated(rows: pd.DataFrame) -> np.ndarray:
    """b of a model at μ = 1 in every set (LEI's desired μ under adversarial interventions):
    each subject has attributes of its own, on which it scores 1 and every partner 0, so that
    |γ(x, a)| = 1 there (with position 0 and no noise: scores of exactly 0 and 1)."""
    subjects, _, attributes = codes(rows)[4]
    b = -np.ones((subjects, attributes))
    for x in range(subjects):
        b[x, x::subjects] = 1.0
    return b
