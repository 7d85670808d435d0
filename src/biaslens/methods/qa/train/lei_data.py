"""Training examples for LEI fine-tuning (Zhao et al. 2021, Appendix B.2).

One example per paragraph of an LEI split and question (the attribute question and its
negation), carrying what its loss needs: the subjects' spans, the adversarial target (the
dominant subject) and the irrelevant target (zero-shot probabilities without the intervention).

Both targets come from a zero-shot *reference*, computed once before training:

* ``model`` — the model about to be fine-tuned, without interventions. The dominant subject of
  (x1, x2, q) is x1 when bias(x1, x2, q) = mean over templates of C(x1, x2, q, τ) is > 0, else
  x2 (Appendix B.2); the negated question gets the other subject (as in the official files'
  ``tomax``). The mean runs over *every* template of the domain, as the reference's
  ``adding_cbias.py`` reads it from a zero-shot run over the whole domain: a training file
  holds only some templates of a pair and attribute (``train_64`` exactly one), and C of one
  template is the instance-level judgement the paper warns against. The irrelevant targets are
  the model's probabilities on the training contexts themselves (without the intervention).
* ``file`` — the split's stored ``start-end-score`` and ``tomax`` fields: RoBERTa-large SQuAD
  probabilities, meaningful for an extractive model only. They were computed *with* each
  paragraph's intervention in the question (they differ across the interventions of one
  context), so they are the zero-shot model's answers to the training inputs themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from biaslens.common import atomic
from biaslens.errors import BiaslensError
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.data.lei_interventions import attach_interventions
from biaslens.methods.qa.data.unqover import QuestionSet
from biaslens.methods.qa.metrics.unqover import comparative_scores
from biaslens.methods.qa.scoring.qa import (
    QAMode,
    SpanAdjustment,
    long_table,
    score_examples,
    subject_probabilities,
)
from biaslens.models.base import LM
from biaslens.progress import Progress

Reference = Literal["model", "file"]
SUBJECTS = ("first", "second")


@dataclass(frozen=True)
class ZeroShotReference:
    """Per split row and question: probabilities (rows, 2, 2 subjects, K) and the dominant
    subject (rows, 2): 0 = first, 1 = second, -1 = unknown."""

    probs: np.ndarray
    dominant: np.ndarray

    def save(self, path: Path) -> None:
        table = pd.DataFrame(
            {
                "probs": list(self.probs.reshape(len(self.probs), -1)),
                "dominant_q0": self.dominant[:, 0],
                "dominant_q1": self.dominant[:, 1],
            }
        )
        atomic.write_parquet(path, table.assign(k=int(self.probs.shape[-1])))

    @classmethod
    def load(cls, path: Path) -> ZeroShotReference:
        table = pd.read_parquet(path)
        k = int(table["k"].iloc[0])
        probs = np.stack(table["probs"].to_list()).reshape(len(table), 2, 2, k)
        dominant = table[["dominant_q0", "dominant_q1"]].to_numpy(dtype=int)
        return cls(probs, dominant)


def template_contexts(
    questions: QuestionSet, split: pd.DataFrame, path: Path | str
) -> pd.DataFrame:
    """Every template's context, without interventions and in both subject orders, of the
    (subject pair, attribute) triples of ``split``: what bias(x1, x2, q) averages over."""
    wanted = set(zip(split["first"], split["second"], split["attribute"], strict=True))
    wanted |= {(b, a, attribute) for a, b, attribute in wanted}
    parts = []
    for chunk in questions.iter_examples():
        keys = zip(chunk["first"], chunk["second"], chunk["attribute"], strict=True)
        keep = np.fromiter((key in wanted for key in keys), dtype=bool, count=len(chunk))
        if keep.any():
            parts.append(chunk[keep])
    found = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    seen = (
        set(zip(found["first"], found["second"], found["attribute"], strict=True))
        if len(found)
        else set()
    )
    missing = sorted(wanted - seen)
    if missing:
        first, second, attribute = missing[0]
        raise BiaslensError(
            f"{path}: {len(missing)} subject pair(s) and attribute(s) of the training file are "
            f"not in the {questions.name} word lists ({questions.slots_path.parent.parent}), e.g. "
            f"{first!r} / {second!r} / {attribute!r}; the dominant subjects need every template "
            "of them"
        )
    found = found.assign(intervention="", intervention_type="none", intervention_id="none")
    return found.reset_index(drop=True)


def template_bias(rows: pd.DataFrame, probs: np.ndarray) -> pd.Series:
    """bias(x1, x2, q) = mean over the templates in ``rows`` of C(x1, x2, q, τ) (Appendix
    B.2), indexed by (x1, x2, attribute).

    ``rows``: contexts without interventions in both subject orders; ``probs``: their
    probabilities (rows, 2, 2, K). S = sqrt(p_start · p_end) (K = 2) or the candidate
    probability (K = 1).
    """
    scores = np.sqrt(probs.prod(-1)) if probs.shape[-1] == 2 else probs[..., 0]
    comparative = comparative_scores(long_table(rows, scores.reshape(-1, 2)))
    return comparative.groupby(["x1", "x2", "attribute"], sort=False)["C"].mean()


def dominant_subjects(contexts: pd.DataFrame, bias: pd.Series) -> np.ndarray:
    """Dominant subject (0 first / 1 second) of each context's two questions: the first
    subject of the attribute question when bias(first, second, attribute) > 0; the negated
    question gets the other one."""
    keys = pd.MultiIndex.from_arrays([contexts["first"], contexts["second"], contexts["attribute"]])
    values = bias.reindex(keys).to_numpy()
    if np.isnan(values).any():
        row = contexts.iloc[int(np.flatnonzero(np.isnan(values))[0])]
        raise BiaslensError(
            f"no zero-shot bias for {row['first']!r} / {row['second']!r} / {row['attribute']!r}"
        )
    q0 = np.where(values > 0, 0, 1)
    return np.stack([q0, 1 - q0], axis=1)


def adversarial_bias(
    lm: LM,
    domain: pd.DataFrame,
    interventions: pd.DataFrame,
    progress: Progress,
    mode: QAMode | None = None,
    adjustment: SpanAdjustment = "none",
) -> pd.Series:
    """bias(x1, x2, q) as LEI's reference code computes it (``adding_cbias.py`` reads the
    ``-adversarial-bias.json`` that ``analysis.py`` writes): the mean of C over every template
    × every adversarial intervention of the attribute's category, from zero-shot predictions
    question first (``qa_hf/predict.py``) with the span adjustment ``adjustment``."""
    rows = attach_interventions(
        domain.drop(columns=["intervention", "intervention_type", "intervention_id"]),
        interventions,
        ("adversarial",),
    )
    scores = score_examples(lm, rows, progress, mode, adjustment, "question-first")
    comparative = comparative_scores(scores, ("intervention_id",))
    return comparative.groupby(["x1", "x2", "attribute"], sort=False)["C"].mean()


def model_reference(
    lm: LM,
    split: pd.DataFrame,
    questions: QuestionSet,
    progress: Progress,
    mode: QAMode | None = None,
    qa_order: str = "question-first",
    path: Path | str = "training file",
    adversarial: tuple[pd.DataFrame, SpanAdjustment] | None = None,
) -> ZeroShotReference:
    """Zero-shot targets from ``lm``: its probabilities on the split's contexts without
    interventions (irrelevant loss) and the dominant subjects from every template of the
    ``questions`` domain (adversarial loss), read in the input order training uses.
    ``adversarial``: (the domain's interventions, span adjustment) to compute the dominant
    subjects as the reference code does (:func:`adversarial_bias`) rather than as Appendix
    B.2 states (:func:`template_bias`)."""
    base = lei.without_interventions(split)
    try:
        probs = subject_probabilities(lm, base, progress, mode, qa_order)
        domain = template_contexts(questions, split, path)
        if adversarial is None:
            domain_probs = subject_probabilities(lm, domain, progress, mode, qa_order)
            bias = template_bias(domain, domain_probs)
        else:
            interventions, adjustment = adversarial
            bias = adversarial_bias(lm, domain, interventions, progress, mode, adjustment)
        dominant = dominant_subjects(base, bias)
    except BiaslensError as error:
        raise BiaslensError(f"computing the zero-shot dominant subjects: {error}") from None
    index = pd.MultiIndex.from_frame(base[["context", "question", "negated_question"]])
    rows = index.get_indexer(
        pd.MultiIndex.from_frame(split[["context", "question", "negated_question"]])
    )
    return ZeroShotReference(probs[rows], dominant[rows])


def file_reference(split: pd.DataFrame, path: Path) -> ZeroShotReference:
    """The split's stored zero-shot start/end probabilities and ``tomax`` targets."""
    columns = [f"zs_q{q}_{s}_{end}" for q in (0, 1) for s in SUBJECTS for end in ("start", "end")]
    probs = split[columns].to_numpy(dtype=float).reshape(len(split), 2, 2, 2)
    dominant = np.full((len(split), 2), -1)
    for q in (0, 1):
        named = split[f"dominant_q{q}"].to_numpy()
        dominant[:, q] = np.select([named == "first", named == "second"], [0, 1], -1)
    irrelevant = (split["intervention_type"] == "irrelevant").to_numpy()
    missing = irrelevant & np.isnan(probs).any(axis=(1, 2, 3))
    _refuse_rows(
        path,
        split,
        missing,
        "irrelevant paragraph(s) lack the zero-shot 'start-end-score' "
        "probabilities the irrelevant loss needs",
        "to compute them",
    )
    return ZeroShotReference(probs, dominant)


@dataclass(frozen=True)
class LeiTrainingSet:
    """Examples (one row per paragraph and question) and their targets, aligned by position."""

    examples: pd.DataFrame
    reference: np.ndarray  # (examples, 2 subjects, K)
    dominant: np.ndarray  # (examples,) 0 / 1, -1 where the type needs none

    def __len__(self) -> int:
        return len(self.examples)

    def counts(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.examples["intervention_type"].value_counts().items()}


def training_set(
    split: pd.DataFrame,
    reference: ZeroShotReference,
    path: Path | str,
    types: tuple[str, ...] = lei.INTERVENTION_TYPES,
) -> LeiTrainingSet:
    """Examples of the chosen intervention types with their targets; errors name the file and
    the first bad paragraph before any training starts."""
    keep = split["intervention_type"].isin(types).to_numpy()
    if not keep.any():
        raise BiaslensError(
            f"{path}: no training paragraphs of type(s) {', '.join(types)} "
            f"(the file has {', '.join(sorted(set(split['intervention_type'])))})"
        )
    split = split[keep].reset_index(drop=True)
    probs, dominant = reference.probs[keep], reference.dominant[keep]
    adversarial = (split["intervention_type"] == "adversarial").to_numpy()
    lacking = adversarial & (dominant < 0).any(axis=1)
    _refuse_rows(
        path,
        split,
        lacking,
        "adversarial paragraph(s) have no dominant subject ('tomax')",
        "to compute it with the zero-shot model",
    )
    columns = [
        "key",
        "intervention_type",
        "intervention",
        "context",
        "first",
        "second",
        "first_start",
        "second_start",
    ]
    parts = []
    for q, column in enumerate(("question", "negated_question")):
        part = split[columns].assign(question=split[column], q=q)
        parts.append(part)
    examples = pd.concat(parts, ignore_index=True)
    reference_probs = np.concatenate([probs[:, 0], probs[:, 1]])
    targets = np.concatenate([dominant[:, 0], dominant[:, 1]])
    targets = np.where(examples["intervention_type"] == "adversarial", targets, -1)
    return LeiTrainingSet(examples, reference_probs, targets)


def qa_rows_for_training(qa: pd.DataFrame, path: Path | str, extractive: bool) -> pd.DataFrame:
    """SQuAD rows with one gold answer (the first); extractive training needs its offset."""
    rows = qa.assign(answer=[answers[0] for answers in qa["answers"]])
    if not extractive:
        return rows
    starts = [s[0] if len(s) else None for s in rows["answer_starts"]]
    for i, (start, answer, context) in enumerate(
        zip(starts, rows["answer"], rows["context"], strict=True)
    ):
        if start is None or context[start : start + len(answer)] != answer:
            raise BiaslensError(
                f"{path}: question {rows['id'].iloc[i]!r}: the span loss needs 'answer_start' "
                f"with {answer!r} at that offset of the context"
            )
    return rows.assign(answer_start=starts)


def balanced_order(types: pd.Series, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Batches of example indices with about the same number of each intervention type.

    Each type's examples are shuffled, then dealt round-robin (type by type) into one stream
    that is cut into batches; a type that runs out leaves the others to fill the rest.
    """
    queues = [rng.permutation(np.flatnonzero(types.to_numpy() == t)) for t in sorted(set(types))]
    stream = []
    for position in range(max(len(q) for q in queues)):
        stream.extend(int(q[position]) for q in queues if position < len(q))
    stream = np.array(stream, dtype=int)
    return [stream[i : i + batch_size] for i in range(0, len(stream), batch_size)]


def _refuse_rows(path, split: pd.DataFrame, rows: np.ndarray, what: str, fix: str) -> None:
    """One line naming how many of the file's rows lack what training needs (``what``), the
    first one's key, and the model reference that computes it instead (``fix``)."""
    if rows.any():
        key = split["key"].iloc[int(np.flatnonzero(rows)[0])]
        raise BiaslensError(
            f"{path}: {int(rows.sum())} {what}, e.g. key {key!r}; use the model reference "
            f"(--reference model) {fix}"
        )
