"""``lei-eval`` as an lm-evaluation-harness task (its :class:`~biaslens.framework.hooks.
LmEvalTask`, which names :func:`lei_task`): generative choice scoring of a causal model, one ``multiple_choice`` request per
question in the UnifiedQA layout, the two subjects (each in both spellings) as the choices; S
normalised over the two; μ, η and θ4 per set (``mu_none``, ``mu_ethical`` …) by biaslens's
UnQover metrics. The extractive span scores of LEI are not lm-eval requests and are not
exported.
"""

# ruff: noqa: E501

from __future__ import annotations

from pathlib import Path

from biaslens.data import sources
from biaslens.framework.lm_eval import LOAD, write_task

LEI_UTILS = (
    '''"""Written by biaslens (biaslens export lm-eval): loads the rows beside this file,
turns lm-eval's log-likelihoods of the two subjects into UnQover scores, and aggregates them
with biaslens's own metrics (biaslens must be installed where lm-eval runs)."""

'''
    + LOAD
    + '''
KEYS = ("set", "intervention_id", "first", "second", "template", "attribute", "negated")


def process_results(doc, results):
    """S of both subjects: their probabilities as the answer's beginning (each subject's two
    spellings, after a space and without one, added), normalised over the two."""
    lls = [loglikelihood for loglikelihood, _ in results]
    top = max(lls)
    weights = [math.exp(v - top) for v in lls]
    first, second = weights[0] + weights[1], weights[2] + weights[3]
    item = {**{k: doc[k] for k in KEYS}, "s_first": first / (first + second),
            "s_second": second / (first + second)}
    return {f"{metric}_{doc['set']}": item for metric in ("mu", "eta", "theta4")}


def _metric(items, name):
    import pandas as pd
    from biaslens.errors import BiaslensError
    from biaslens.methods.qa.metrics.unqover import model_summary

    try:
        value = float(model_summary(pd.DataFrame(items), within=("intervention_id",)).iloc[0][name])
    except (BiaslensError, KeyError, ValueError, IndexError) as error:
        return cannot(name, f"{type(error).__name__}: {str(error)[:200]}")
    if math.isnan(value):
        return cannot(name, "no question of these docs has both its forms scored (a larger --limit)")
    return value


def mu(items):
    return _metric(items, "mu")


def eta(items):
    return _metric(items, "eta")


def theta4(items):
    return _metric(items, "theta4")
'''
)


def lei_task(folder: Path, limit: int | None, data_dir: Path | None, domain: str) -> Path:
    """The ``biaslens_lei_{domain}`` task: zero-shot LEI of a causal model, each question in
    the UnifiedQA layout with the two subjects as the choices (``biaslens run lei-eval``'s
    generative scoring; ``limit`` context pairs, drawn as it draws them); μ, η and θ4 per set."""
    from biaslens.methods.qa.lei_eval.method import build_rows
    from biaslens.methods.qa.lei_eval.settings import make_settings

    settings = make_settings(domain=domain, limit=limit)
    rows, _ = build_rows(settings, sources.locate("lei", data_dir))
    return write_task(
        folder,
        f"biaslens_lei_{domain}",
        _questions(rows),
        LEI_UTILS,
        f"zero-shot LEI ({domain}, limit {limit}): UnifiedQA choice scoring of a causal LM; μ, "
        "η and θ4 per set.",
        [
            (f"{m}_{name}", m, False)
            for name in dict.fromkeys(rows["set"])
            for m in ("mu", "eta", "theta4")
        ],
    )


def _questions(rows):
    """Both questions of each row, the two subjects in both spellings as the choices."""
    from biaslens.methods.qa.scoring.qa import reply_spellings, subject_choice_request

    for row in rows.to_dict("records"):
        first = row.get("first_text") or row["first"]
        second = row.get("second_text") or row["second"]
        for negated, question in ((False, row["question"]), (True, row["negated_question"])):
            request = subject_choice_request(
                question, first, second, row["context"], row.get("intervention") or "", True
            )
            record = {
                k: row[k]
                for k in ("set", "intervention_id", "first", "second", "template", "attribute")
            }
            choices = [v for c in request.choices for v in reply_spellings(c)]
            yield {**record, "negated": negated, "input": request.prompt, "choices": choices}
