"""The app's three tools as plain functions of a model (testable without a server).

* CID playground (Yona et al., §3): CID(x; x', λ) and CID(x'; x, λ) side by side.
* Specification detector (SIB Method 2, §5): pronoun masses of a ``[MASK]`` sentence under
  ``In {DATE}, …`` for a sweep of dates; verdict "unspecified" when |p_f(2016) − p_f(1901)| (the
  normalised female share, percentage points) exceeds the threshold.
* Dose-response (SIB Method 1, Fig. 2): a sentence with a ``[DATE]`` or ``[PLACE]`` slot and a
  ``[MASK]``, swept over dates or places; pronoun masses per value.

Causal and seq2seq models read the sentence inside the paper's prompt A (Appendix D.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from biaslens.common.atomic import json_records
from biaslens.errors import BiaslensError
from biaslens.methods.cid.scoring.contrastive import DEFAULT_STOP
from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.metrics.sib import normalised_female_pct, specification_metric
from biaslens.methods.sib.scoring.pronouns import check_pronoun_model, score_rows
from biaslens.models.base import LM, ModelKind
from biaslens.models.requests import MASK, ContrastiveGenerateRequest

SLOTS = ("[DATE]", "[PLACE]")
DETECTOR_DATES = tuple(int(d) for d in np.rint(np.linspace(1901, 2016, 24)))
EARLIEST, LATEST = 1901, 2016
MAX_TEXT = 500
MAX_VALUES = 60

ProgressCallback = Callable[[int, int], None]


class _Ticks:
    """Adapts a (done, total) callback to the backend's ``progress.task`` protocol."""

    def __init__(self, callback: ProgressCallback | None) -> None:
        self.callback = callback

    def task(self, description: str, total: int, unit: str = "req"):
        done = 0

        def tick(n: int) -> None:
            nonlocal done
            done += n
            if self.callback is not None:
                self.callback(done, total)

        return tick


def _text(value: str, what: str) -> str:
    value = (value or "").strip()
    if not value:
        raise BiaslensError(f"{what} is empty")
    if len(value) > MAX_TEXT:
        raise BiaslensError(f"{what} is longer than {MAX_TEXT} characters")
    return value


def cid_pair(lm: LM, x: str, x_prime: str, lam: float, max_new_tokens: int = 20) -> dict:
    """Both contrastive continuations for one λ (one batched call)."""
    x, x_prime = _text(x, "x"), _text(x_prime, "x'")
    if not 0 <= lam <= 1000:
        raise BiaslensError(f"λ must be between 0 and 1000, got {lam}")
    lm.require("contrastive_generate")
    requests = [
        ContrastiveGenerateRequest(a, b, lam, max_new_tokens, stop=DEFAULT_STOP)
        for a, b in ((x, x_prime), (x_prime, x))
    ]
    first, second = lm.contrastive_generate(requests)
    return {"lam": lam, "x": x, "x_prime": x_prime, "cid_x": first.text, "cid_x_prime": second.text}


def _model_input(lm: LM, sentence: str) -> str:
    return sentence if lm.kind == ModelKind.MASKED else mgc.wrap_in_prompt(sentence, "A")


def _masked_sentence(sentence: str) -> str:
    sentence = _text(sentence, "the sentence")
    if sentence.count(MASK) != 1:
        raise BiaslensError(f"the sentence needs exactly one {MASK} where the pronoun goes")
    return sentence


def pronoun_masses(
    lm: LM, sentences: Sequence[str], progress: ProgressCallback | None = None
) -> pd.DataFrame:
    """p_female, p_male, p_neutral (full-vocabulary masses) and the female share (%)."""
    check_pronoun_model(lm, "exact")
    rows = pd.DataFrame({"sentence": list(sentences)})
    rows["input"] = [_model_input(lm, s) for s in rows["sentence"]]
    scored = score_rows(lm, rows, "exact", _Ticks(progress), label="sweep")
    scored["pct_female"] = normalised_female_pct(
        scored["p_female"], scored["p_male"], scored["p_neutral"]
    )
    return scored[["sentence", "p_female", "p_male", "p_neutral", "pct_female"]]


def detect(
    lm: LM,
    sentence: str,
    threshold: float = 0.5,
    dates: Sequence[int] = DETECTOR_DATES,
    progress: ProgressCallback | None = None,
) -> dict:
    """Pronoun masses across a date sweep and the Method 2 verdict."""
    sentence = check_detect(sentence, dates)
    table = pronoun_masses(lm, [mgc.inject_date(sentence, d) for d in dates], progress)
    table.insert(0, "value", list(dates))
    share = dict(zip(table["value"], table["pct_female"], strict=True))
    metric = float(specification_metric(share[LATEST], share[EARLIEST]))
    if math.isnan(metric):  # no pronoun mass at an end date: no share to compare
        return {
            "rows": json_records(table),
            "metric": None,
            "threshold": threshold,
            "verdict": "no pronoun predicted",
            "explanation": f"no pronoun mass at {EARLIEST} or {LATEST}: no share to compare",
        }
    unspecified = bool(metric > threshold)
    return {
        "rows": json_records(table),
        "metric": metric,
        "threshold": threshold,
        "verdict": "unspecified" if unspecified else "well-specified",
        "explanation": (
            f"|p_f({LATEST}) − p_f({EARLIEST})| = {metric:.3f} percentage points "
            f"{'>' if unspecified else '≤'} {threshold}"
        ),
    }


def check_detect(sentence: str, dates: Sequence[int] = DETECTOR_DATES) -> str:
    """The detector's input, checked before any model work (the app answers 400 here)."""
    sentence = _masked_sentence(sentence)
    if EARLIEST not in dates or LATEST not in dates:
        raise BiaslensError(f"the date sweep must include {EARLIEST} and {LATEST}")
    return sentence


def check_dose(sentence: str, values: Sequence[str] | None = None) -> tuple[str, str, list]:
    """The dose-response input (sentence, slot, values), checked before any model work."""
    sentence = _masked_sentence(sentence)
    slots = [s for s in SLOTS if s in sentence]
    if len(slots) != 1 or sentence.count(slots[0]) != 1:
        raise BiaslensError("the sentence needs exactly one [DATE] or one [PLACE] slot")
    slot = slots[0]
    if not values:
        values = mgc.w_values("dates" if slot == "[DATE]" else "places")
    values = [str(v).strip() for v in values if str(v).strip()]
    if not values or len(values) > MAX_VALUES:
        raise BiaslensError(f"give between 1 and {MAX_VALUES} values to sweep")
    return sentence, slot, values


def dose_response(
    lm: LM,
    sentence: str,
    values: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
) -> dict:
    """Pronoun masses for each value put in the sentence's [DATE] or [PLACE] slot."""
    sentence, slot, values = check_dose(sentence, values)
    table = pronoun_masses(lm, [sentence.replace(slot, v) for v in values], progress)
    table.insert(0, "value", values)
    return {"slot": slot, "rows": json_records(table)}
