"""SIB's methods as lm-evaluation-harness tasks (their :class:`~biaslens.framework.hooks.
LmEvalTask`, which names the functions here): one ``multiple_choice`` request per input, the choices being the Appendix E words
in both spellings a reply can begin with (" She", "She"); per input the female, male and
neutral masses (the summed probabilities).

* ``sib-mgc`` (exact scoring of a causal model): the MGC inputs of one prompt and W kind,
  aggregated into the Method 1 slopes in pp per W step (``female_slope`` …
  ``female_minus_male_slope``);
* ``sib-detect`` (exact scoring of a causal model): each sentence at its earliest and latest
  date in prompt A; TPR and TNR per set, from the female share's change against the threshold
  (``tpr_extended`` …).

Top-5 (paper) scoring reads a greedy decode's top-k at every step and masked LMs fill a slot:
neither is an lm-eval request, and neither is exported.
"""

# ruff: noqa: E501

from __future__ import annotations

from pathlib import Path

from biaslens.errors import BiaslensError
from biaslens.framework.lm_eval import LOAD, write_task
from biaslens.methods.sib.data.pronouns import target_words
from biaslens.models.base import ModelKind

MASSES = '''

def masses(doc, results):
    """Each gender's mass: the summed probabilities of its words, each in both spellings (the
    choices)."""
    mass = {"female": 0.0, "male": 0.0, "neutral": 0.0}
    for gender, (loglikelihood, _) in zip(doc["genders"], results):
        mass[gender] += math.exp(loglikelihood)
    return mass
'''
"""The pronoun masses of the SIB tasks' utils.py."""

MGC_UTILS = (
    '''"""Written by biaslens (biaslens export lm-eval): loads the rows beside this file and
turns lm-eval's log-likelihoods into the probe's numbers."""

'''
    + LOAD
    + MASSES
    + '''

def process_results(doc, results):
    """Per input: each gender's mass, keyed by W."""
    mass = masses(doc, results)
    w = doc["w_index"]
    return {
        "female_slope": (w, mass["female"]),
        "male_slope": (w, mass["male"]),
        "neutral_slope": (w, mass["neutral"]),
        "female_minus_male_slope": (w, mass["female"] - mass["male"]),
    }


def slope(items):
    """SIB Method 1: the least-squares slope of the per-W mean probability (in percent) on the
    W index (pp per W step)."""
    by_w = {}
    for w, value in items:
        by_w.setdefault(w, []).append(100.0 * value)
    x = sorted(by_w)
    if len(x) < 2:
        return cannot("the slope", f"the docs scored hold {len(x)} W value(s) and a slope "
                      "needs 2 or more (a larger --limit)")
    y = [sum(by_w[w]) / len(by_w[w]) for w in x]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((a - mx) ** 2 for a in x)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx
'''
)

DETECT_UTILS = (
    '''"""Written by biaslens (biaslens export lm-eval): loads the rows beside this file
and turns lm-eval's log-likelihoods into SIB Method 2's detector rates (Section 5)."""

'''
    + LOAD
    + MASSES
    + '''

def process_results(doc, results):
    """Per input (a sentence at its earliest or latest date): each gender's mass."""
    item = (doc["id"], doc["end"], doc["well_specified"], doc["threshold"], masses(doc, results))
    return {f"{rate}_{doc['set']}": item for rate in ("tpr", "tnr")}


def _verdicts(items):
    """(well-specified, flagged) per sentence: |p_f(latest) - p_f(earliest)| in pp of the
    female share f / (f + m + n) against the threshold; sentences without mass have none."""
    by_sentence = {}
    for sentence, end, well_specified, threshold, mass in items:
        total = mass["female"] + mass["male"] + mass["neutral"]
        share = 100.0 * mass["female"] / total if total > 0 else float("nan")
        by_sentence.setdefault(sentence, [well_specified, threshold, {}])[2][end] = share
    verdicts = []
    for well_specified, threshold, shares in by_sentence.values():
        metric = abs(shares["latest"] - shares["earliest"])
        if not math.isnan(metric):
            verdicts.append((well_specified, metric > threshold))
    return verdicts


def tpr(items):
    flags = [flagged for well, flagged in _verdicts(items) if not well]
    if not flags:
        return cannot("TPR", "no under-specified sentence with pronoun mass at both dates "
                      "among the docs scored (a larger --limit)")
    return sum(flags) / len(flags)


def tnr(items):
    flags = [flagged for well, flagged in _verdicts(items) if well]
    if not flags:
        return cannot("TNR", "no well-specified sentence with pronoun mass at both dates "
                      "among the docs scored (a larger --limit)")
    return sum(not f for f in flags) / len(flags)
'''
)


SLOPES = ("female_slope", "male_slope", "neutral_slope", "female_minus_male_slope")


def mgc_task(
    folder: Path,
    limit: int | None,
    data_dir: Path | None,
    prompt: str,
    w_kind: str,
    seed: int = 0,
) -> Path:
    """The ``biaslens_mgc`` task: MGC inputs of one prompt and W kind (``limit`` per W value,
    drawn as ``biaslens run sib-mgc --limit`` draws them)."""
    from biaslens.methods.sib.data import mgc
    from biaslens.methods.sib.mgc.method import build_rows
    from biaslens.methods.sib.mgc.settings import make_settings

    if prompt not in mgc.PROMPTS:
        raise BiaslensError(f"unknown prompt {prompt!r}; choose from {', '.join(mgc.PROMPTS)}")
    settings = make_settings(w_kinds=(w_kind,), limit=limit, seed=seed, prompts=(prompt,))
    _, rows = build_rows(settings, (prompt,))
    rows = spanning_order(rows)
    return write_task(
        folder,
        "biaslens_mgc",
        _with_pronouns(rows, ("id", "prompt", "w_kind", "w", "w_index", "input")),
        MGC_UTILS,
        f"SIB Method 1 on MGC (prompt {prompt}, W = {w_kind}, limit {limit}): exact pronoun "
        "masses of a causal LM; slopes in pp per W step.",
        [(metric, "slope", False) for metric in SLOPES],
    )


def spanning_order(rows):
    """MGC rows in rounds, each round one input at every W value, the W values of a round in
    an order that spreads them over the range (the two ends first, then halves, quarters…):
    ``lm_eval --limit N``, which keeps the first N docs, then keeps inputs at many W values
    (the slope needs two at least), not all at the first one."""
    rows = rows.reset_index(drop=True)
    values = sorted(rows["w_index"].unique())
    spread = {w: rank for rank, w in enumerate(_spread(values))}
    round_ = rows.groupby("w_index").cumcount()
    order = sorted(rows.index, key=lambda i: (round_[i], spread[rows.at[i, "w_index"]]))
    return rows.loc[order].reset_index(drop=True)


def _spread(values: list) -> list:
    """``values`` with the ends first, then the middles of the gaps left, recursively."""
    if len(values) <= 2:
        return list(values)
    chosen, gaps = [values[0], values[-1]], [(0, len(values) - 1)]
    while gaps:
        low, high = gaps.pop(0)
        if high - low < 2:
            continue
        middle = (low + high) // 2
        chosen.append(values[middle])
        gaps += [(low, middle), (middle, high)]
    return chosen


def detect_task(folder: Path, limit: int | None, data_dir: Path | None) -> Path:
    """The ``biaslens_sib_detect`` task: SIB Method 2 with exact scoring of a causal model, each
    sentence at its earliest and latest date in prompt A (``biaslens run sib-detect``'s inputs;
    ``limit`` occupations); TPR and TNR per set."""
    from biaslens.methods.sib.detect.sentences import build_sentences, expand_dates
    from biaslens.methods.sib.detect.settings import make_settings

    settings = make_settings(limit=limit)
    sentences = build_sentences(settings, data_dir)
    rows = expand_dates(sentences, settings, ModelKind.CAUSAL).merge(
        sentences[["set", "id", "well_specified"]], on=["set", "id"]
    )
    keys = ("set", "id", "end", "date", "input", "well_specified")
    return write_task(
        folder,
        "biaslens_sib_detect",
        _with_pronouns(rows, keys, {"threshold": settings.threshold}),
        DETECT_UTILS,
        f"SIB Method 2 (limit {limit}): exact pronoun masses of a causal LM at the earliest "
        "and latest date; TPR and TNR per set.",
        [
            (f"{rate}_{name}", rate, True)
            for name in dict.fromkeys(rows["set"])
            for rate in ("tpr", "tnr")
        ],
    )


def _with_pronouns(rows, keys, constants=None):
    """The ``keys`` of each row, ``constants``, and the pronoun words as its choices (each
    word after a space and without one)."""
    pairs = target_words(fills_slot=False)
    genders = [g for g, _ in pairs]
    choices = [w for _, w in pairs]
    for row in rows.to_dict("records"):
        yield {
            **{k: row[k] for k in keys},
            **(constants or {}),
            "choices": choices,
            "genders": genders,
        }
