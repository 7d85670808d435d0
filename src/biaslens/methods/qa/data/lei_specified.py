"""LEI's specified contexts (Q_N, Fig. 6): contexts with a sentence that names the answer
(``[subj] was skilled at chopping pieces.``), from the release's specified sample file or from a
sentence per attribute."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from biaslens.common.files import read_text
from biaslens.data.sources import read_json
from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.lei_interventions import SUBJECT_LISTS, split_intervention
from biaslens.methods.qa.data.unqover_lists import parse_subjects

SPECIFIED_SAMPLE = "specified/extraMalewithIntvs-sample.source.json"


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
