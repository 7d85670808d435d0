"""How MGC's headline reads each input, for adaptive allocation of sampled replies
(:mod:`biaslens.scoring.allocation`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from biaslens.methods.sib.data.pronouns import GENDERS
from biaslens.methods.sib.scoring.pronouns import reply_gender
from biaslens.scoring.allocation import SampledDesign
from biaslens.scoring.sampled import class_counts

FRAME = ["prompt", "w_kind", "verb", "life_stage"]
"""An MGC sentence frame under one prompt: the inputs that differ only in W."""


def mgc_design(rows: pd.DataFrame) -> SampledDesign:
    """Method 1's headline is the female − male slope over W per prompt and W kind (SIB §4),
    and its interval reads the spread of the per-W means about the line as one variance for
    every W (:mod:`biaslens.methods.sib.intervals.trend`). So every input weighs alike, and what
    is allocated is the frames' unequal sampling variance (a frame rarely answered with a
    pronoun needs fewer replies): an input's siblings are its frame's other W values, which
    get nearly the same replies, keeping the per-W means' noise alike over W. (Weighting the
    W steps by their leverage in the slope would save a quarter of the calls at equal
    variances, but makes that noise unequal over W, and the interval, which takes it as
    equal, then grows wider than fixed K's: measured 1.21× at 72% of the calls.)"""
    frame = _codes(rows, FRAME)
    return SampledDesign(
        weights=np.ones(len(rows)),
        estimates=_codes(rows, ["prompt", "w_kind"]),
        groups=frame,
        variance=difference_variance,
    )


def difference_variance(_: int, replies: Sequence[str]) -> float:
    """One reply's variance of 1[female] − 1[male], p_f + p_m − (p_f − p_m)², with half a
    reply added to each of the three outcomes (a pilot without a pronoun is not certainty)."""
    counts = class_counts(replies, reply_gender, GENDERS)
    n = len(replies) + 1.5
    female = (counts[GENDERS.index("female")] + 0.5) / n
    male = (counts[GENDERS.index("male")] + 0.5) / n
    return female + male - (female - male) ** 2


def _codes(rows: pd.DataFrame, columns: list[str]) -> np.ndarray:
    return rows.groupby(columns, sort=False).ngroup().to_numpy()
