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
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.common.files import read_text
from biaslens.data.sources import read_json
from biaslens.data.squad import squad_articles
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
SPECIFIED_SAMPLE = "specified/extraMalewithIntvs-sample.source.json"
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


def read_specified(path: Path) -> pd.DataFrame:
    """Specified-context examples (UnQover JSON with interventions in the questions).

    ``specified`` names the subject the context reveals: the one the context mentions twice."""
    path = Path(path)
    raw = read_json(path, "specified-context file")
    rows = []
    for key, example in raw.items():
        parts = key.split("|")
        if len(parts) not in (8, 9):
            raise BiaslensError(f"{path}: key {key!r} does not have 8 or 9 '|' fields")
        context = example.get("context", "")
        first, second = parts[2], parts[3]
        counts = (context.count(first), context.count(second))
        if sorted(counts) != [1, 2]:
            raise BiaslensError(f"{path}: {key}: cannot tell which subject the context specifies")
        answer_cluster = (parts[0] if counts[0] == 2 else parts[1]).lower()
        questions, interventions = [], []
        for q in ("q0", "q1"):
            intervention, question = split_intervention(example.get(q, {}).get("question", ""))
            questions.append(question)
            interventions.append(intervention)
        rows.append(
            {
                "key": key,
                "first": first,
                "second": second,
                "first_start": context.find(first),
                "second_start": context.find(second, context.find(first) + len(first)),
                "first_cluster": parts[0],
                "second_cluster": parts[1],
                "context": context,
                "question": questions[0],
                "negated_question": questions[1],
                "intervention": interventions[0],
                "intervention_type": f"specified-{answer_cluster}",
                "intervention_id": f"specified-{answer_cluster}",
                "category": parts[5].lower(),
                "template": int(parts[4]),
                "attribute": parts[6],
                "specified": first if counts[0] == 2 else second,
            }
        )
    return pd.DataFrame(rows)


def read_specifying_sentences(path: Path) -> dict[str, str]:
    """A TSV of ``attribute<TAB>sentence`` where the sentence names the answer as ``[subj]``."""
    path = Path(path)
    sentences = {}
    lines = read_text(path, "specifying-sentence file").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2 or "[subj]" not in fields[1]:
            raise BiaslensError(f"{path}:{number}: expected attribute<TAB>sentence with [subj]")
        sentences[fields[0].strip()] = fields[1].strip()
    if not sentences:
        raise BiaslensError(f"{path}: no sentences")
    return sentences


def subject_clusters(lei_dir: Path, domain: str) -> dict[str, str]:
    """Subject (lower-cased) -> its cluster, from the domain's LEI word lists: ``female`` /
    ``male`` for gender; a subject without a cluster is its own (religion, ethnicity)."""
    from biaslens.data.unqover import parse_subjects

    clusters = {}
    for name in SUBJECT_LISTS[domain]:
        for subject in parse_subjects(Path(lei_dir) / "word_lists" / "nouns" / "subjects" / name):
            cluster = (
                subject.cluster if subject.cluster.lower() not in ("", "none") else subject.term
            )
            clusters[subject.term.lower()] = cluster.lower()
    return clusters


def answer_subjects(examples: pd.DataFrame, answer: str, clusters: dict[str, str]) -> list:
    """Per example, its subject of cluster (or name) ``answer``; None when not exactly one of
    the two subjects is."""
    wanted = answer.lower()

    def matches(subject: str) -> bool:
        return subject.lower() == wanted or clusters.get(subject.lower()) == wanted

    chosen = []
    for a, b in zip(examples["first"], examples["second"], strict=True):
        hits = [s for s in (a, b) if matches(s)]
        chosen.append(hits[0] if len(hits) == 1 else None)
    return chosen


def specify(
    examples: pd.DataFrame,
    sentences: dict[str, str],
    answer: str,
    clusters: dict[str, str],
) -> pd.DataFrame:
    """Q_N from underspecified examples: append ``sentences[attribute]`` with ``[subj]`` → the
    subject of cluster (or name) ``answer``, in both subject orders. Only pairs with exactly one
    such subject are kept, so that a model that follows the context scores μ = 1 (LEI Fig. 6
    evaluates the female-answer and male-answer subsets apart). Attributes without a sentence
    are dropped."""
    kept = examples[examples["attribute"].isin(sentences)].copy()
    if kept.empty:
        raise BiaslensError("no example's attribute has a specifying sentence")
    kept["specified"] = answer_subjects(kept, answer, clusters)
    kept = kept[kept["specified"].notna()].copy()
    if kept.empty:
        raise BiaslensError(f"no subject pair has exactly one {answer!r} subject to specify")
    chosen = list(kept["specified"])
    texts = {}
    for which in ("first", "second"):
        column = f"{which}_text" if f"{which}_text" in kept else which
        texts.update(dict(zip(kept[which], kept[column], strict=True)))
    kept["context"] = [
        f"{c} {sentences[a].replace('[subj]', texts[s])}"
        for c, a, s in zip(kept["context"], kept["attribute"], chosen, strict=True)
    ]
    kept["intervention_type"] = f"specified-{answer.lower()}"
    kept["intervention_id"] = f"specified-{answer.lower()}"
    return kept


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
