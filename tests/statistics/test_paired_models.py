"""Two audited models' μ, paired over the contexts both answered (:mod:`biaslens.methods.qa.
paired`), at the quick audit's lei-eval design, by simulation from :mod:`tests.statistics.
lei_model`.

Model A prefers subjects by b_A(x, a); model B, a related model, by b_B = ½ b_A + its own
part, and its template effects are 0.7 of A's plus its own (two models reading the same
templates react alike in part). Each model's μ is its own by the definition (the subjects are
the population asked about; templates and noise are the draws), and the truth is their
difference. The interval is conservative by construction: coverage at least the band's floor.
(It is not much narrower than the two models' own intervals read side by side: most of its
width is μ's maximisation bias, bounded by the cross-fitted values on each side, which pairing
does not remove; what pairing adds is a difference whose interval is a claim, where two
overlapping intervals are none.)
"""

from __future__ import annotations

import numpy as np
import pytest

from biaslens.methods.qa.metrics.unqover_summary import subject_strata
from biaslens.methods.qa.paired import _difference
from biaslens.metrics.intervals import IntervalSpec
from tests.statistics.coverage import record, replicate
from tests.statistics.lei_model import codes, rows, scores, truth

SET = ("ethical",)
WITHIN = ("set", "intervention_id")


def _replication(r: int) -> dict:
    contexts = rows("quick", SET)
    rng = np.random.default_rng([r, 80])
    subjects, templates, attributes = codes(contexts)[4]
    b_a = rng.normal(0, 0.08, (subjects, attributes))
    b_b = 0.5 * b_a + rng.normal(0, 0.06, (subjects, attributes))
    u_a = rng.normal(0, 0.02, (subjects, templates, attributes))
    u_b = 0.7 * u_a + rng.normal(0, 0.02 * np.sqrt(1 - 0.49), u_a.shape)
    a, b = scores(contexts, b_a, rng, u=u_a), scores(contexts, b_b, rng, u=u_b)
    change = truth(contexts, b_a)["ethical"] - truth(contexts, b_b)["ethical"]
    spec = IntervalSpec(0.95, r, "fixed")
    found = _difference(a, b, WITHIN, spec, subject_strata(a), "mu")
    low, high = found["ci_low"], found["ci_high"]
    return {"difference": (bool(low <= change <= high), high - low)}


@pytest.mark.slow
def test_two_models_paired_difference_of_mu_holds_at_the_quick_design(full_data):
    rows("quick", SET)
    results = replicate(_replication)
    covered, widths = results["difference"]
    record("LEI μ, model A − model B, quick design", covered, widths, conservative=True)


def test_runs_that_drew_different_contexts_get_no_paired_interval():
    """The hook refuses to pair what is not paired: two score tables on different units."""
    contexts = rows("quick", SET)
    rng = np.random.default_rng(0)
    subjects, templates, attributes = codes(contexts)[4]
    b = rng.normal(0, 0.08, (subjects, attributes))
    a = scores(contexts, b, rng)
    other = scores(contexts[contexts["template"] != contexts["template"].iloc[0]], b, rng)
    found = _difference(a, other, WITHIN, IntervalSpec(0.95, 0, "fixed"), None, "mu")
    assert np.isnan(found["ci_low"]) and "different subject pair × template units" in found["note"]
