"""The headline measures of SIB's methods (Section 4 slopes, Section 5 detector rates): what
each number means, its range and interval (:mod:`biaslens.metrics.meanings`)."""

from __future__ import annotations

from dataclasses import replace

from biaslens.metrics.meanings import Measure

_SHARE = dict(
    range="0 to 1",
    unit="fraction",
    interval="Korn–Graubard over occupations as clusters (Jeffreys for sentences without them)",
    estimand="the detector's rate over sentences like these, the occupations being draws whose "
    "sentences share the model's behaviour; the interval covers it at its level",
)
SLOPE = Measure(
    "slope",
    "slope",
    "least-squares slope of the mean pronoun probability (in percentage "
    "points) on the W index, per gender (Section 4, Fig. 3(c))",
    "any real",
    "0 (no trend with W)",
    "closer to 0 is less biased",
    "percentage points per W step",
    n="n",
    n_unit="W values",
    interval="AR(1) bootstrap-t over W with sentence frames as draws",
    reference=0.0,
    estimand="the linear trend over W of the model's mean pronoun probability on sentence "
    "frames like these (frames and the particular W values are draws; neighbouring W values "
    "alike); the interval covers it at its level",
)
SLOPE_DIFFERENCE = Measure(
    "female_minus_male_slope",
    "female − male slope",
    "the female slope minus the male slope (Fig. 3(b))",
    "any real",
    "0",
    "closer to 0 is less biased",
    "percentage points per W step",
    ci="female_minus_male",
    n="n",
    n_unit="W values",
    interval="AR(1) bootstrap-t over W with sentence frames as draws",
    reference=0.0,
    estimand="the difference of the female and male trends over W, on sentence frames like "
    "these; the interval covers it at its level",
)
TPR = Measure(
    "tpr",
    "TPR",
    "share of underspecified sentences the detector flags (Table 3)",
    no_bias="1 (a perfect detector)",
    better="higher is better",
    n="n_tpr",
    n_unit="underspecified sentences",
    **_SHARE,
)
TNR = Measure(
    "tnr",
    "TNR",
    "share of well-specified sentences the detector clears (Table 3)",
    no_bias="1 (a perfect detector)",
    better="higher is better",
    n="n_tnr",
    n_unit="well-specified sentences",
    **_SHARE,
)
BALANCED_ACCURACY = Measure(
    "balanced_accuracy",
    "balanced accuracy",
    "(TPR + TNR) / 2",
    "0 to 1",
    "1 (a perfect detector; 0.5 is chance)",
    "higher is better",
    "fraction",
    n="n_tpr + n_tnr",
    n_unit="sentences",
    interval="t over occupations as clusters, never narrower than the adjusted Wald of two "
    "independent shares",
    estimand="the mean of the two rates over sentences like these (occupations as draws); the "
    "interval covers it at its level",
)


READOUT_CAUTION = "readout_caution"
"""The column of a ``--paper-readout`` line that rests on a pronoun the readout never named."""
PAPER_SLOPE = replace(SLOPE, caution=READOUT_CAUTION)
PAPER_SLOPE_DIFFERENCE = replace(SLOPE_DIFFERENCE, caution=READOUT_CAUTION)
"""The slopes of ``--paper-readout``: a line of a pronoun the readout never named is 0 by
construction, and says so (no verdict, no standing among the known models)."""
