"""LEI's interventions (Zhao et al., 2021, Section 2.2): the sentences, their desired μ, and how
they are put in front of a question.

Interventions: ``{type: {category: [sentence, …]}}`` with types ethical, adversarial and
irrelevant; NaN or blank sentences are skipped with one warning that counts them. Every question
gets every intervention of its thematic category (the attribute's cluster; gender's occupations
are all ``none``). *Irrelevant* interventions are the file's own, or another domain's *ethical*
interventions of the same category (``general`` when it has none).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd

from biaslens.data.sources import read_json
from biaslens.errors import BiaslensError

INTERVENTION_TYPES = ("ethical", "adversarial", "irrelevant")
DESIRED_MU = {
    "none": None,
    "ethical": 0.0,
    "adversarial": 1.0,
    "irrelevant": None,
    "specified": 1.0,
}
"""Desired μ per set (LEI Section 2.3); ``None`` = unchanged from the no-intervention μ.
Specified subsets (``specified-female`` …) want 1 like ``specified``."""
SUBJECT_LISTS = {
    "gender": ("female", "male"),
    "religion": ("religion",),
    "ethnicity": ("ethnicity",),
}
"""The LEI word lists of each domain's subjects (``word_lists/nouns/subjects/…``)."""


def desired_mu(set_name: str) -> float | None:
    base = "specified" if set_name.startswith("specified") else set_name
    return DESIRED_MU.get(base)


QUESTION_AFTER_INTERVENTION = re.compile(r"^Note that, (.+?) ((?:Who|Which|What) [^?]*\?)$", re.S)


def intervene_question(question: str, intervention: str) -> str:
    """LEI's extractive encoding of an intervention (prepended to the question)."""
    if not intervention:
        return question
    return f"Note that, {intervention[0].lower()}{intervention[1:]} {question}"


def split_intervention(asked: str) -> tuple[str, str]:
    """(intervention, question) of an extractive LEI question; ("", asked) without one."""
    match = QUESTION_AFTER_INTERVENTION.match(asked)
    return (match.group(1), match.group(2)) if match else ("", asked)


def load_interventions(path: Path) -> pd.DataFrame:
    """Columns ``type, category, index, intervention`` (index = position in the file's list)."""
    path = Path(path)
    raw = read_json(path, "intervention file")
    if not isinstance(raw, dict):
        raise BiaslensError(f"{path}: expected {{type: {{category: [sentences]}}}}")
    unknown = sorted(set(raw) - set(INTERVENTION_TYPES))
    if unknown:
        raise BiaslensError(f"{path}: unknown intervention type(s) {unknown}")
    rows, skipped = [], 0
    for kind, categories in raw.items():
        if not isinstance(categories, dict):
            raise BiaslensError(f"{path}: {kind!r} must map categories to lists of sentences")
        for category, sentences in categories.items():
            for index, sentence in enumerate(sentences):
                if not isinstance(sentence, str) or not sentence.strip():
                    if isinstance(sentence, (str, float)) or sentence is None:
                        skipped += 1
                        continue
                    raise BiaslensError(f"{path}: {kind}/{category}[{index}] is not text")
                rows.append(
                    {
                        "type": kind,
                        "category": category.lower(),
                        "index": index,
                        "intervention": sentence.strip(),
                    }
                )
    if skipped:
        warnings.warn(f"{path}: skipped {skipped} blank or NaN intervention(s)", stacklevel=2)
    if not rows:
        raise BiaslensError(f"{path}: no interventions")
    return pd.DataFrame(rows)


def irrelevant_from(other_domain: pd.DataFrame, categories: list[str]) -> pd.DataFrame:
    """Another domain's ethical interventions as irrelevant ones, per category
    (its ``general`` ones where it lacks the category)."""
    ethical = other_domain[other_domain["type"] == "ethical"]
    parts = []
    for category in categories:
        chosen = ethical[ethical["category"] == category]
        if chosen.empty:
            chosen = ethical[ethical["category"] == "general"]
        if chosen.empty:
            raise BiaslensError(f"the other domain has no ethical {category!r} or general ones")
        parts.append(chosen.assign(type="irrelevant", category=category))
    return pd.concat(parts, ignore_index=True)


def attach_interventions(
    examples: pd.DataFrame, interventions: pd.DataFrame, types: tuple[str, ...] = INTERVENTION_TYPES
) -> pd.DataFrame:
    """Every example × every intervention of its category and of each type in ``types``.

    Adds ``intervention_type``, ``intervention_id`` (``type_category-index``) and
    ``intervention``; an example whose category has no intervention is an error."""
    chosen = interventions[interventions["type"].isin(types)].rename(
        columns={"type": "intervention_type"}
    )
    chosen = chosen.assign(
        intervention_id=chosen["intervention_type"]
        + "_"
        + chosen["category"]
        + "-"
        + chosen["index"].astype(str)
    ).drop(columns="index")
    lowered = examples.assign(_category=examples["category"].str.lower())
    missing = sorted(set(lowered["_category"]) - set(chosen["category"]))
    if missing:
        raise BiaslensError(f"no interventions for categor(ies) {missing}")
    out = lowered.merge(chosen.rename(columns={"category": "_category"}), on="_category")
    return out.drop(columns="_category")
