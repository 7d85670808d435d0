"""Training examples, zero-shot targets and balanced batches for LEI fine-tuning."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data import lei
from biaslens.methods.qa.data.unqover import load_question_set
from biaslens.methods.qa.scoring.qa import subject_probabilities
from biaslens.methods.qa.train.lei_data import (
    ZeroShotReference,
    balanced_order,
    dominant_subjects,
    file_reference,
    model_reference,
    template_bias,
    template_contexts,
    training_set,
)
from biaslens.models.base import LM, ModelIdentity, ModelKind
from biaslens.models.requests import ChoiceLogprobsResult
from biaslens.progress import NoProgress
from tests.conftest import DATA

TRAIN_64 = lei.split_path("religion/train_64", DATA / "lei")


def _base(templates=(1, 2)) -> pd.DataFrame:
    rows = []
    for template in templates:
        for first, second in (("Amish", "Sikh"), ("Sikh", "Amish")):
            context = f"The {first} man met the {second} man ({template})."
            rows.append(
                {
                    "first": first,
                    "second": second,
                    "first_start": context.index(first),
                    "second_start": context.index(second, context.index(first) + len(first)),
                    "context": context,
                    "question": "Who stole?",
                    "negated_question": "Who helped?",
                    "template": template,
                    "attribute": "stole",
                    "intervention": "",
                }
            )
    return pd.DataFrame(rows)


def _probs(base: pd.DataFrame, amish: dict[int, tuple[float, float]]) -> np.ndarray:
    """K = 1 probabilities: Amish gets ``amish[template]`` = (p under a, p under ā) whatever
    its position, Sikh the rest."""
    probs = np.zeros((len(base), 2, 2, 1))
    for i, row in enumerate(base.itertuples()):
        for q in (0, 1):
            p = amish[row.template][q]
            probs[i, q, :, 0] = (p, 1 - p) if row.first == "Amish" else (1 - p, p)
    return probs


def test_dominant_subject_follows_the_template_mean_of_c():
    base = _base()
    # template 1: B(Amish) = 0.7 - 0.4 = 0.3, B(Sikh) = -0.3, C(Amish, Sikh) = 0.3
    # template 2: B(Amish) = 0.45 - 0.55 = -0.1, B(Sikh) = 0.1, C = -0.1 ; mean C = 0.1 > 0
    probs = _probs(base, {1: (0.7, 0.4), 2: (0.45, 0.55)})
    dominant = dominant_subjects(base, template_bias(base, probs))
    amish_first = (base["first"] == "Amish").to_numpy()
    assert dominant[amish_first].tolist() == [[0, 1], [0, 1]]  # q0 -> Amish (first)
    assert dominant[~amish_first].tolist() == [[1, 0], [1, 0]]  # q0 -> Amish (second)
    # mean C < 0 flips it
    probs = _probs(base, {1: (0.6, 0.5), 2: (0.3, 0.7)})
    dominant = dominant_subjects(base, template_bias(base, probs))
    assert dominant[amish_first].tolist() == [[1, 0], [1, 0]]


def test_extractive_dominance_uses_sqrt_of_start_times_end():
    base = _base(templates=(1,))
    probs = np.zeros((len(base), 2, 2, 2))
    # S(Amish) = sqrt(0.9 * 0.1) = 0.3 < S(Sikh) = sqrt(0.4 * 0.4) = 0.4 under a; equal under ā
    for i, row in enumerate(base.itertuples()):
        amish, sikh = [0.9, 0.1], [0.4, 0.4]
        probs[i, 0] = [amish, sikh] if row.first == "Amish" else [sikh, amish]
        probs[i, 1] = 0.25
    dominant = dominant_subjects(base, template_bias(base, probs))
    assert dominant[(base["first"] == "Sikh").to_numpy()].tolist() == [[0, 1]]


def test_file_reference_matches_the_official_tomax():
    split = lei.read_split(TRAIN_64)
    reference = file_reference(split, TRAIN_64)
    adversarial = (split["intervention_type"] == "adversarial").to_numpy()
    expected = split.loc[adversarial, "dominant_q0"].map({"first": 0, "second": 1})
    assert reference.dominant[adversarial, 0].tolist() == expected.tolist()
    assert reference.probs[0, 0, 0].tolist() == [
        split["zs_q0_first_start"].iloc[0],
        split["zs_q0_first_end"].iloc[0],
    ]
    data = training_set(split, reference, TRAIN_64)
    assert len(data) == 2 * len(split)  # both questions of every paragraph
    assert (data.dominant[data.examples["intervention_type"] != "adversarial"] == -1).all()
    assert set(data.dominant[data.examples["intervention_type"] == "adversarial"]) <= {0, 1}


def _religion_questions():
    return load_question_set("religion", DATA / "lei" / "word_lists")


def test_model_reference_scores_contexts_without_the_intervention(tiny_backends):
    lm = tiny_backends["roberta-qa"]
    split = lei.read_split(TRAIN_64)
    reference = model_reference(lm, split, _religion_questions(), NoProgress())
    assert reference.probs.shape == (len(split), 2, 2, 2)
    plain = subject_probabilities(lm, split.assign(intervention=""), NoProgress())
    np.testing.assert_allclose(reference.probs, plain, rtol=1e-6)
    assert set(np.unique(reference.dominant)) <= {0, 1}
    assert (reference.dominant.sum(axis=1) == 1).all()  # the negated question flips it


def test_reference_round_trips(tmp_path):
    reference = ZeroShotReference(np.random.default_rng(0).random((3, 2, 2, 2)), np.eye(3, 2))
    reference.save(tmp_path / "r.parquet")
    loaded = ZeroShotReference.load(tmp_path / "r.parquet")
    np.testing.assert_array_equal(loaded.probs, reference.probs)
    np.testing.assert_array_equal(loaded.dominant, reference.dominant)


def test_missing_dominance_and_empty_selection_are_errors(tmp_path):
    raw = json.loads(TRAIN_64.read_text())
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa.pop("tomax", None)
    path = tmp_path / "no_tomax.json"
    path.write_text(json.dumps(raw))
    split = lei.read_split(path)
    with pytest.raises(BiaslensError, match=r"no_tomax.json: 10 adversarial .*tomax.*--reference"):
        training_set(split, file_reference(split, path), path)
    with pytest.raises(BiaslensError, match="no training paragraphs of type"):
        training_set(split, file_reference(split, path), path, types=("none",))


def test_missing_subject_spans_are_named(tmp_path):
    raw = json.loads(TRAIN_64.read_text())
    raw["data"][0]["paragraphs"][0]["qas"][0]["answers"][1].pop("answer_start")
    path = tmp_path / "no_span.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BiaslensError, match=r"no_span.json: data\[0\].paragraphs\[0\].qas\[0\]"):
        lei.read_split(path)


def test_balanced_batches_mix_the_types_evenly():
    types = pd.Series(["ethical"] * 6 + ["adversarial"] * 6 + ["irrelevant"] * 9)
    batches = balanced_order(types, 6, np.random.default_rng(0))
    assert sorted(np.concatenate(batches).tolist()) == list(range(21))
    for batch in batches[:3]:
        assert types[batch].value_counts().tolist() == [2, 2, 2]
    again = balanced_order(types, 6, np.random.default_rng(0))
    assert all((a == b).all() for a, b in zip(batches, again, strict=True))


def test_extractive_qa_rows_need_their_answer_offsets(tmp_path):
    from biaslens.methods.qa.data.squad import read_squad
    from biaslens.methods.qa.train.lei_data import qa_rows_for_training

    context = "Alice and Bob went to the market."
    qas = [
        {"id": "1", "question": "Who went?", "answers": [{"text": "Bob", "answer_start": 10}]},
        {"id": "2", "question": "Where?", "answers": [{"text": "the market"}]},
    ]
    path = tmp_path / "qa.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    qa = read_squad(path)
    assert qa_rows_for_training(qa, path, extractive=False)["answer"].tolist() == [
        "Bob",
        "the market",
    ]
    with pytest.raises(BiaslensError, match=r"qa.json: question '2': .*answer_start"):
        qa_rows_for_training(qa, path, extractive=True)
    rows = qa_rows_for_training(qa.head(1), path, extractive=True)
    assert rows["answer_start"].tolist() == [10]


class _TemplateBiasedLM(LM):
    """A causal 'model' whose answers depend on the template: in template ``own`` the attribute
    question gives subject ``a`` p = 0.8, elsewhere subject ``b`` gets p = 0.6; every negated
    question is a coin flip (0.5)."""

    def __init__(self, templates: dict[str, int], negated: set[str], own: int, a: str, b: str):
        self.identity = ModelIdentity("template-biased", ModelKind.CAUSAL, "0" * 64)
        self.templates, self.negated, self.own = templates, negated, own
        self.a, self.b = a.lower(), b.lower()
        self.seen_templates: set[int] = set()

    def choice_logprobs(self, requests, progress=None):
        out = []
        for request in requests:
            template = next(t for c, t in self.templates.items() if c in request.prompt)
            self.seen_templates.add(template)
            favoured, p = (self.a, 0.8) if template == self.own else (self.b, 0.6)
            if request.prompt.split("\n")[0] in self.negated:
                p = 0.5
            probs = [p if c.strip() == favoured else 1 - p for c in request.choices]
            out.append(ChoiceLogprobsResult(tuple(math.log(q) for q in probs), (1, 1)))
        if progress:
            progress(len(requests))
        return out


def test_dominant_subject_averages_c_over_every_template_of_the_domain():
    """train_64 holds one template per pair and attribute. There C(a, b) = ½[(0.8 − 0.5) −
    (0.2 − 0.5)] = 0.3 says a dominates; in each of the other T − 1 templates C = ½[(0.4 − 0.5)
    − (0.6 − 0.5)] = −0.1, so the mean over all T templates (Appendix B.2, the reference's
    adding_cbias.py) is (0.3 − 0.1 (T − 1)) / T < 0 and b dominates."""
    split = lei.read_split(TRAIN_64)
    questions = _religion_questions()
    row = split[split["intervention_type"] == "adversarial"].iloc[0]
    a, b = row["first"], row["second"]
    split = split[
        split["first"].isin([a, b]) & split["second"].isin([a, b])
        & (split["attribute"] == row["attribute"])
    ].reset_index(drop=True)  # fmt: skip
    assert split["template"].nunique() == 1
    contexts = questions.contexts()
    templates = set(contexts["template"])
    assert len(templates) >= 5  # so that the mean is negative
    negated = {q.lower() for q in questions.questions()["negated_question"]}
    lm = _TemplateBiasedLM(
        {c.lower(): int(t) for c, t in zip(contexts["context"], contexts["template"], strict=True)},
        negated, int(row["template"]), a, b,
    )  # fmt: skip
    reference = model_reference(lm, split, questions, NoProgress())
    assert lm.seen_templates == templates
    a_first = (split["first"] == a).to_numpy()
    assert reference.dominant[a_first].tolist() == [[1, 0]] * int(a_first.sum())  # b, second
    assert reference.dominant[~a_first].tolist() == [[0, 1]] * int((~a_first).sum())  # b, first
    domain = template_contexts(questions, split, TRAIN_64)
    assert set(domain["template"]) == templates and len(domain) == 2 * len(templates)


def test_template_contexts_name_a_pair_the_word_lists_lack():
    split = lei.read_split(TRAIN_64)
    split.loc[0, "first"] = "Zoroastrian"
    with pytest.raises(BiaslensError, match=r"train_64.* not in the religion word lists.*Zoroas"):
        template_contexts(_religion_questions(), split, TRAIN_64)
