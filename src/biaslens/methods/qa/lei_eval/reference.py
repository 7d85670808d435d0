"""LEI's own base model beside a lei-eval run: the paper's RoBERTa-large fine-tuned on SQuAD,
scored on the very contexts the run drew, from the zero-shot probabilities the official splits
carry (LEI, Section 4 and Appendix B: "pre-compute the scores of RoBERTa-SQuAD models").

Where the numbers come from (allenai/ethical-interventions @ :data:`LEI_COMMIT`): ``README.md``
step 2 runs ``qa_hf/predict.py --hf_model tli8hf/unqover-roberta-large-squad`` with the
intervention before the question; ``predict.py`` keeps, per subject, the start and end
probabilities after UnQover's span adjustment (``improve_prediction``); ``convert2squad.py``
writes them as each answer's ``start-end-score``; ``analysis.py`` scores a subject S =
sqrt(p_start · p_end). So the reference's S per subject and question is that product's root,
and μ, η, θ4, δ, ε are biaslens's own metrics of those scores with the run's intervals (the
crossed design of subject pairs × templates).

They are of the question *with* its intervention: a context asked under several interventions
has different stored scores under each (a test checks it), although Appendix B describes the
irrelevant loss's pre-computed scores as "without any interventions".

The splits hold intervention contexts only: the reference has no no-intervention set, so its
rows are the three intervention sets, and μ − μ with none is not computable for it.

Paired: the audited model's μ − the reference's μ in each set over the same subject pair ×
template units (:func:`~biaslens.methods.qa.intervals.unqover_change.paired_intervals`, the
construction of lei-eval's change of μ, conservative by construction): the two models answered
the same questions, so what the contexts share cancels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens.common.atomic import json_records
from biaslens.framework.hooks import reference_row
from biaslens.methods.qa.lei_eval.table import CHANGED, lei_table
from biaslens.methods.qa.metrics.unqover import model_summary
from biaslens.methods.qa.metrics.unqover_stream import paired_change
from biaslens.metrics.intervals import IntervalSpec

LEI_COMMIT = "6c499c6b965bd12433ebdffedde2a1d1639fe0ee"
"""The allenai/ethical-interventions commit whose code was read for :data:`PROTOCOL`."""
MODEL = "tli8hf/unqover-roberta-large-squad"
KNOWN_AS = "RoBERTa-large SQuAD, LEI's base model"
SOURCE = (
    "allenai/ethical-interventions: data/underspecified/*/addedbias_*_squad.json, each "
    "answer's start-end-score (qa_hf/predict.py, convert2squad.py)"
)
PROTOCOL = (
    "LEI reference code: extractive span scores S = sqrt(p_start · p_end) with UnQover's span "
    "adjustment ('Note that, ' + the intervention before the question), question first, "
    "joined by one separator token (biaslens: the tokenizer's pair template)"
)
SAME_PROTOCOL = {"mode": "extractive", "span_adjustment": "reference", "qa_order": "question-first"}
"""The lei-eval settings that score the audited model as the reference was scored."""
METRICS = ("mu", "eta", "theta4", "delta", "epsilon")
ZERO_SHOT = [
    f"zs_q{q}_{name}_{end}"
    for q in (0, 1)
    for name in ("first", "second")
    for end in ("start", "end")
]


def protocol_gap(settings: dict) -> str | None:
    """Why a lei-eval run's scores are not the reference's protocol (None: they are)."""
    gaps = [
        f"{key} {settings.get(key)!r} (the reference: {value!r})"
        for key, value in SAME_PROTOCOL.items()
        if settings.get(key) != value
    ]
    return "; ".join(gaps) or None


def reference_scores(scores: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    """The reference model's scores of the intervention-set questions of a run's ``scores``
    (the same rows, S from the stored probabilities); or None and why not."""
    part = scores[scores["set"].isin(CHANGED)]
    if part.empty:
        return None, "the run scored no intervention set"
    if any(c not in part for c in ZERO_SHOT):
        return None, "the split carries no zero-shot start-end-score"
    missing = part[ZERO_SHOT].isna().any(axis=1)
    if missing.any():
        return None, (
            f"{int(missing.sum())} question(s) of the split carry no start-end-score: the "
            "reference needs every question the run asked"
        )
    negated = part["negated"].to_numpy(dtype=bool)
    out = part.copy()
    for name in ("first", "second"):
        q0 = np.sqrt(part[f"zs_q0_{name}_start"] * part[f"zs_q0_{name}_end"]).to_numpy()
        q1 = np.sqrt(part[f"zs_q1_{name}_start"] * part[f"zs_q1_{name}_end"]).to_numpy()
        out[f"s_{name}"] = np.where(negated, q1, q0)
    return out.reset_index(drop=True), None


def reference_table(
    scores: pd.DataFrame,
    intervals: IntervalSpec | None,
    strata: dict[str, str] | None,
    gap: str | None,
) -> tuple[pd.DataFrame | None, str | None]:
    """Per intervention set: the reference model's μ, η, θ4, δ, ε (with the run's intervals),
    the audited model's μ on the same units, and audited − reference with its paired interval;
    or None and why there is no reference."""
    reference, why = reference_scores(scores)
    if reference is None:
        return None, why
    table = lei_table(reference, None, intervals, strata)
    keep = ["set", "contexts"] + [
        c
        for c in table.columns
        if c.split("_ci_")[0] in METRICS or c in (f"{m}_crossfit" for m in METRICS)
    ]
    table = table[[c for c in keep if c in table]].copy()
    table.insert(1, "reference_model", f"{KNOWN_AS} ({MODEL})")
    within = ("intervention_id",)
    for i, name in enumerate(table["set"]):
        audited = scores[scores["set"] == name]
        if intervals is None:
            mu = float(model_summary(audited, within=within)["mu"].iloc[0])
            table.loc[i, "audited_mu"] = mu
            table.loc[i, "mu_minus_reference"] = mu - float(table.loc[i, "mu"])
            continue
        known = reference[reference["set"] == name]
        bounds = paired_change(audited, known, ("set", *within), intervals, strata)
        table.loc[i, "audited_mu"] = bounds["first"]
        table.loc[i, "mu_minus_reference"] = bounds["change"]
        table.loc[i, "mu_minus_reference_ci_low"] = bounds["change_ci_low"]
        table.loc[i, "mu_minus_reference_ci_high"] = bounds["change_ci_high"]
        table.loc[i, "mu_minus_reference_ci_note"] = bounds["change_ci_note"] or ""
        table.loc[i, "units"] = int(bounds["units"])
    table["protocol"] = PROTOCOL
    table["why_not_same"] = gap or ""
    return table, None


def summary(table: pd.DataFrame, gap: str | None) -> dict:
    """``summary.json``'s ``reference``: the known model, where its scores come from, the
    protocol and how the run's differs, and the table's values per set."""
    return {
        "model": MODEL,
        "known_as": KNOWN_AS,
        "source": f"{SOURCE} @ {LEI_COMMIT[:12]}",
        "protocol": PROTOCOL,
        "why_not_same": gap,
        "sets": {
            row.pop("set"): row
            for row in json_records(
                table.drop(columns=["reference_model", "protocol", "why_not_same"])
            )
        },
    }


def references_for(rows: list, record) -> list[dict[str, Any]]:
    """LEI's base model beside a lei-eval run's card ``rows`` (μ, η, θ4, δ, ε per intervention
    set), from what the run computed on its own contexts (``summary.json``'s ``reference``),
    with the paired μ difference beside μ."""
    known = (record.metrics or {}).get("reference")
    if not known:
        return []
    found = []
    for row in rows:
        values = known["sets"].get(row.labels.get("set"))
        if getattr(row, "table", "lei_mu") != "lei_mu" or row.metric not in METRICS or not values:
            continue
        value = values.get(row.metric)
        if value is None:
            continue
        reference = {
            "value": value,
            "ci_low": values.get(f"{row.metric}_ci_low"),
            "ci_high": values.get(f"{row.metric}_ci_high"),
            "source": known["source"],
        }
        found.append(
            reference_row(
                f"{known['known_as']} ({known['model']})",
                row,
                reference,
                known["protocol"],
                known["why_not_same"],
            )
        )
        if row.metric == "mu":
            found[-1].update(
                difference=values.get("mu_minus_reference"),
                difference_ci_low=values.get("mu_minus_reference_ci_low"),
                difference_ci_high=values.get("mu_minus_reference_ci_high"),
                difference_note=values.get("mu_minus_reference_ci_note") or None,
                paired_over=f"{int(values.get('units') or 0)} subject pair × template units",
            )
    return found
