"""The headline measure LEI adds to UnQover's (:mod:`biaslens.methods.qa.metrics.unqover`): the
paired change of μ under an intervention (LEI Section 3)."""

from __future__ import annotations

from biaslens.metrics.meanings import Measure

MU_CHANGE = Measure(
    "mu_change",
    "Δμ",
    "μ under an intervention set − μ with the intervention removed, over the same contexts "
    "(LEI Section 3: ethical advice should lower μ towards 0, adversarial advice raise it "
    "towards 1, irrelevant advice leave it as it is)",
    "−1 to 1",
    "0 (the intervention does not change μ)",
    "towards the set's desired change",
    "probability",
    n="units",
    n_unit="subject pair × template units",
    interval="paired over subjects × templates: cross-fitted and plug-in bounds crosswise",
    reference=0.0,
    estimand="the change of the model's μ over templates like these (and subjects like these "
    "where they are draws) between the same contexts with and without the intervention; the "
    "interval covers it with at least its level",
    conservative=True,
)
"""LEI's paired change of μ (:func:`biaslens.methods.qa.lei_eval.table.change_table`)."""
