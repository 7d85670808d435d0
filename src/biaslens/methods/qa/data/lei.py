"""LEI data (Zhao et al., 2021, Section 2.2): interventions, their question sets, official splits.

* Interventions: ``{type: {category: [sentence, …]}}`` with types ethical, adversarial and
  irrelevant; NaN or blank sentences are skipped with one warning that counts them.
* Every question gets every intervention of its thematic category (the attribute's cluster;
  gender's occupations are all ``none``). *Irrelevant* interventions are the file's own, or
  another domain's *ethical* interventions of the same category (``general`` when it has none).
* Extractive models read an intervention in the question:
  ``"Note that, " + intervention[0].lower() + intervention[1:] + " " + question``.
* Official SQuAD-format splits: each paragraph is one context with two questions (the attribute
  and its negation), both subjects as answers in context order, the intervention type, and a key
  ``subj|subj|tid|category|act|act|type_category-index`` shared by the two subject orders.
* Specified contexts (Q_N): contexts with a sentence that names the answer (``[subj] was skilled
  at chopping pieces.``), from the specified sample file or a sentence per attribute.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.lei_interventions import (
    DESIRED_MU,
    INTERVENTION_TYPES,
    QUESTION_AFTER_INTERVENTION,
    SUBJECT_LISTS,
    attach_interventions,
    desired_mu,
    intervene_question,
    irrelevant_from,
    load_interventions,
    split_intervention,
)
from biaslens.methods.qa.data.lei_specified import (
    SPECIFIED_SAMPLE,
    answer_subjects,
    read_specified,
    read_specifying_sentences,
    specify,
    subject_clusters,
)
from biaslens.methods.qa.data.squad import squad_articles

__all__ = [
    "DESIRED_MU",
    "INTERVENTION_TYPES",
    "QUESTION_AFTER_INTERVENTION",
    "SPECIFIED_SAMPLE",
    "SPLITS",
    "SUBJECT_LISTS",
    "answer_subjects",
    "attach_interventions",
    "desired_mu",
    "disjoint_split",
    "intervene_question",
    "irrelevant_from",
    "load_interventions",
    "read_specified",
    "read_specifying_sentences",
    "read_split",
    "specify",
    "split_intervention",
    "split_path",
    "stratified_keys",
    "subject_clusters",
    "without_interventions",
]

SPLITS: dict[str, str] = {
    "religion/train_64": "religion/addedbias_train_64_squad.json",
    "religion/train_256": "religion/addedbias_train_256_squad.json",
    "religion/train_1024": "religion/addedbias_train_1024_squad.json",
    "religion/train_4096": "religion/addedbias_train_4096_squad.json",
    "religion/noniid_dev": "religion/addedbias_noniid_dev_squad.json",
    "religion/noniid_test": "religion/addedbias_noniid_test_squad.json",
    "ethnicity/noniid_test": "ethnicity/addedbias_noniid_test_squad.json",
    "gender/noniid_test": "gender/addedbias_noniid_test_squad.json",
}


def _fail(path: Path, where: str, message: str):
    raise BiaslensError(f"{path}: {where}: {message}")


def read_split(path: Path) -> pd.DataFrame:
    """An official SQuAD-format LEI split: one row per paragraph (context, both questions).

    Columns: ``key, first, second, first_start, second_start, context, question,
    negated_question, intervention_type, intervention_id, intervention, category, template,
    attribute`` plus the stored zero-shot probabilities ``zs_q{0,1}_{first,second}_{start,end}``
    and the adversarial target ``dominant_q{0,1}`` (``first``/``second``; empty where none)."""
    path = Path(path)
    rows = []
    for a, article in enumerate(squad_articles(path, "split file")):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            where = f"data[{a}].paragraphs[{p}]"
            rows.append(_split_row(path, where, paragraph))
    if not rows:
        raise BiaslensError(f"{path}: no paragraphs")
    return pd.DataFrame(rows)


def _split_row(path: Path, where: str, paragraph: dict) -> dict:
    for field in ("key", "context", "qas", "intervention"):
        if field not in paragraph:
            _fail(path, where, f"missing field {field!r}")
    if paragraph["intervention"] not in INTERVENTION_TYPES:
        _fail(
            path,
            where,
            f"unknown intervention type {paragraph['intervention']!r} "
            f"(known: {', '.join(INTERVENTION_TYPES)})",
        )
    parts = str(paragraph["key"]).split("|")
    if len(parts) != 7:
        _fail(path, where, f"key {paragraph['key']!r} does not have 7 '|' fields")
    qas = paragraph["qas"]
    if len(qas) != 2:
        _fail(path, where, f"expected 2 questions (attribute and negation), found {len(qas)}")
    questions, interventions, row = [], [], {}
    for q, qa in enumerate(qas):
        answers = qa.get("answers", [])
        if len(answers) != 2:
            _fail(path, f"{where}.qas[{q}]", "expected both subjects as answers")
        intervention, question = split_intervention(qa.get("question", ""))
        interventions.append(intervention)
        questions.append(question)
        for s, answer in enumerate(answers):
            text, start = answer.get("text"), answer.get("answer_start")
            if not isinstance(text, str) or not isinstance(start, int):
                _fail(path, f"{where}.qas[{q}].answers[{s}]", "needs text and answer_start")
            if paragraph["context"][start : start + len(text)] != text:
                _fail(path, f"{where}.qas[{q}].answers[{s}]", f"{text!r} is not at {start}")
            row[f"s{s}_text_q{q}"], row[f"s{s}_start_q{q}"] = text, start
            score = answer.get("start-end-score", [math.nan, math.nan])
            row[f"zs_q{q}_s{s}_start"], row[f"zs_q{q}_s{s}_end"] = float(score[0]), float(score[1])
        row[f"tomax_q{q}"] = int(qa.get("tomax", -1))
    if interventions[0] != interventions[1]:
        _fail(path, where, "the two questions carry different interventions")
    if row["s0_text_q0"] != row["s0_text_q1"] or row["s1_text_q0"] != row["s1_text_q1"]:
        _fail(path, where, "the two questions list different answers")
    # Answers are stored in context order; index 0/1 -> first/second mentioned subject.
    order = (0, 1) if row["s0_start_q0"] < row["s1_start_q0"] else (1, 0)
    out = {
        "key": paragraph["key"],
        "first": row[f"s{order[0]}_text_q0"],
        "second": row[f"s{order[1]}_text_q0"],
        "first_start": row[f"s{order[0]}_start_q0"],
        "second_start": row[f"s{order[1]}_start_q0"],
        "context": paragraph["context"],
        "question": questions[0],
        "negated_question": questions[1],
        "intervention_type": paragraph["intervention"],
        "intervention_id": parts[6],
        "intervention": interventions[0],
        "category": parts[3],
        "template": int(parts[2]),
        "attribute": parts[4],
    }
    for q in (0, 1):
        for name, s in (("first", order[0]), ("second", order[1])):
            out[f"zs_q{q}_{name}_start"] = row[f"zs_q{q}_s{s}_start"]
            out[f"zs_q{q}_{name}_end"] = row[f"zs_q{q}_s{s}_end"]
        tomax = row[f"tomax_q{q}"]
        out[f"dominant_q{q}"] = (
            "" if tomax not in (0, 1) else ("first" if order[tomax] == 0 else "second")
        )
    return out


def without_interventions(split: pd.DataFrame) -> pd.DataFrame:
    """The split's contexts without interventions (one row per context and question pair)."""
    columns = [
        "first",
        "second",
        "first_start",
        "second_start",
        "context",
        "question",
        "negated_question",
        "category",
        "template",
        "attribute",
    ]
    base = split.drop_duplicates(["context", "question", "negated_question"])[columns].copy()
    base["intervention"], base["intervention_type"], base["intervention_id"] = "", "none", "none"
    return base.reset_index(drop=True)


def split_path(name: str, lei_dir: Path) -> Path:
    if name not in SPLITS:
        raise BiaslensError(f"unknown LEI split {name!r}; known: {', '.join(SPLITS)}")
    return Path(lei_dir) / "data" / "underspecified" / SPLITS[name]


def stratified_keys(
    table: pd.DataFrame, limit: int, by: tuple[str, ...], unit: str = "pair_key", seed: int = 0
) -> pd.DataFrame:
    """Keep about ``limit`` units (rows sharing ``unit`` stay together), proportionally per
    stratum ``by`` and at least one per stratum, seeded."""
    units = table.drop_duplicates(unit)[[unit, *by]]
    if limit >= len(units):
        return table
    rng = np.random.default_rng(seed)
    chosen = []
    strata = units.groupby(list(by), sort=True)
    for _, part in strata:
        take = max(1, round(limit * len(part) / len(units)))
        order = rng.permutation(len(part))[:take]
        chosen.extend(part[unit].iloc[order])
    return table[table[unit].isin(set(chosen))].reset_index(drop=True)


def cell_filling_keys(
    table: pd.DataFrame, units: int, by: tuple[str, ...] = (), key: str = "pair_key", seed: int = 0
) -> pd.DataFrame:
    """Keep context pairs (rows sharing ``key``) until every (subject, attribute) cell of each
    stratum ``by`` holds ``units`` distinct subject pair × template units, or all it has.

    μ and η average C over each cell's units before taking a maximum or a sign, so a draw of
    random context pairs that leaves most cells with one unit makes them noise (the sparse
    caution); this draw spreads the same budget so that every cell is read. Keys are visited in
    a seeded random order and one is kept where it adds a new unit to a cell still short of
    ``units``: which contexts are kept depends on the design alone, never on a score."""
    if units < 1:
        raise BiaslensError(f"--per-cell must be at least 1, got {units}")
    keys = table.drop_duplicates(key)[[key, *by, "first", "second", "template", "attribute"]]
    low = keys[["first", "second"]].min(axis=1).astype(str)
    high = keys[["first", "second"]].max(axis=1).astype(str)
    unit_of = (low + "|" + high + "|" + keys["template"].astype(str)).to_numpy()
    order = np.random.default_rng(seed).permutation(len(keys))
    stratum = keys[list(by)].astype(str).agg("|".join, axis=1) if by else pd.Series("", keys.index)
    strata, firsts, seconds = (
        stratum.to_numpy(),
        keys["first"].to_numpy(),
        keys["second"].to_numpy(),
    )
    attributes, names = keys["attribute"].to_numpy(), keys[key].to_numpy()
    held: dict[tuple, set[str]] = {}
    chosen = set()
    for i in order:
        cells = [(strata[i], subject, attributes[i]) for subject in (firsts[i], seconds[i])]
        sets = [held.setdefault(cell, set()) for cell in cells]
        if any(len(s) < units and unit_of[i] not in s for s in sets):
            chosen.add(names[i])
            for s in sets:
                s.add(unit_of[i])
    return table[table[key].isin(chosen)].reset_index(drop=True)


def disjoint_split(
    table: pd.DataFrame,
    by: str,
    fractions: dict[str, float],
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    """Split so that no value of ``by`` (e.g. ``attribute``, ``template``, ``intervention_id``,
    ``domain``; ``subject`` = both subjects) appears in two parts. Values are shuffled with
    ``seed`` and cut by the fractions (which must sum to 1)."""
    if not fractions or abs(sum(fractions.values()) - 1) > 1e-9 or min(fractions.values()) <= 0:
        raise BiaslensError(f"split fractions must be positive and sum to 1, got {fractions}")
    column = "first" if by == "subject" else by
    if column not in table:
        raise BiaslensError(f"cannot split by {by!r}: no such column")
    values = sorted(set(table[column]) | (set(table["second"]) if by == "subject" else set()))
    if len(values) < len(fractions):
        raise BiaslensError(f"{len(values)} value(s) of {by!r} cannot make {len(fractions)} parts")
    order = np.random.default_rng(seed).permutation(len(values))
    shuffled = [values[i] for i in order]
    bounds = np.rint(np.cumsum([0, *fractions.values()]) * len(values)).astype(int)
    parts = {}
    for (name, _), lo, hi in zip(fractions.items(), bounds[:-1], bounds[1:], strict=True):
        hi = max(hi, lo + 1)
        members = set(shuffled[lo:hi])
        if by == "subject":
            mask = table["first"].isin(members) & table["second"].isin(members)
        else:
            mask = table[column].isin(members)
        parts[name] = table[mask].reset_index(drop=True)
        if parts[name].empty:
            raise BiaslensError(f"split part {name!r} is empty")
    return parts
