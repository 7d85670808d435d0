"""LEI fine-tuning on its two model classes (extractive QA as the paper, generative as the
UnifiedQA variant), with the defaults and ``--preset paper``: the zero-shot dominant subjects
recomputed from every template of the domain, and every evaluation (zero-shot and of the
trained checkpoint, read back from its folder with transformers) recomputed naively."""

from __future__ import annotations

import json
from collections import defaultdict
from statistics import mean

import pandas as pd
import pytest
from transformers import AutoModelForCausalLM, AutoModelForQuestionAnswering, AutoTokenizer

import biaslens
from biaslens.methods.qa.data.unqover import load_question_set
from tests.conformance import naive
from tests.conformance.test_qa import naive_score
from tests.conftest import DATA

LOADERS = {"roberta-qa": AutoModelForQuestionAnswering, "llama": AutoModelForCausalLM}
CLOSE = {"rel": 1e-4, "abs": 1e-7}
CHECKED_ROWS = 6
"""Training rows whose dominant subject is recomputed naively: each needs every template of
the domain (× every adversarial intervention under the preset) scored one question at a time,
so a few rows exercise the rule as well as all 64 do."""


def naive_dominant(model, tokenizer, name, split_rows, settings, adversarial=None) -> dict:
    """bias(x1, x2, q) = mean of C over every religion template (Appendix B.2), from naive
    scores; ``adversarial``: the reference code's construction instead, every template × every
    adversarial intervention of the attribute's category (``adding_cbias.py``)."""
    questions = load_question_set("religion", DATA / "lei" / "word_lists")
    wanted = {(r["first"], r["second"], r["attribute"]) for r in split_rows}
    wanted |= {(b, a, c) for a, b, c in wanted}
    rows = []
    for chunk in questions.iter_examples():
        for row in chunk.to_dict("records"):
            if (row["first"], row["second"], row["attribute"]) not in wanted:
                continue
            sentences = [""] if adversarial is None else adversarial[row["category"].lower()]
            for k, sentence in enumerate(s.strip() for s in sentences if isinstance(s, str)):
                asked = {**row, "intervention": sentence, "k": k}
                for negated, question in ((False, row["question"]),
                                          (True, row["negated_question"])):  # fmt: skip
                    s_first, s_second = naive_score(name, model, tokenizer, asked, question,
                                                    settings)  # fmt: skip
                    rows.append({**asked, "negated": negated, "s_first": s_first,
                                 "s_second": s_second})  # fmt: skip
    c = defaultdict(list)
    score = {(r["k"], r["template"], r["attribute"], r["negated"], r["first"], r["second"]):
             (r["s_first"], r["s_second"]) for r in rows}  # fmt: skip
    for k, template, attribute, negated, x1, x2 in score:
        if negated:
            continue
        tilde = {}
        for x, y in ((x1, x2), (x2, x1)):
            for neg in (False, True):
                here, there = (
                    (k, template, attribute, neg, x, y),
                    (k, template, attribute, neg, y, x),
                )
                tilde[(x, neg)] = 0.5 * (score[here][0] + score[there][1])
        c[(x1, x2, attribute)].append(
            0.5
            * ((tilde[(x1, False)] - tilde[(x1, True)]) - (tilde[(x2, False)] - tilde[(x2, True)]))
        )
    return {key: mean(values) for key, values in c.items()}


@pytest.mark.slow
@pytest.mark.parametrize("preset", [None, "paper"])
@pytest.mark.parametrize("name", list(LOADERS))
def test_lei_train_targets_and_evaluations_recomputed(name, preset, tiny_models, tmp_path):
    check_lei_train(name, preset, train(name, preset, tiny_models, tmp_path), tiny_models)


@pytest.mark.slow
def test_the_lei_train_check_fails_when_x_dom_is_flipped(tiny_models, tmp_path, monkeypatch):
    """bias(x1, x2, q) with its sign turned: every adversarial target points the other way."""
    from biaslens.methods.qa.train import lei_data

    bias = lei_data.template_bias
    monkeypatch.setattr(lei_data, "template_bias", lambda rows, probs: -bias(rows, probs))
    result = train("roberta-qa", None, tiny_models, tmp_path)
    with pytest.raises(AssertionError):
        check_lei_train("roberta-qa", None, result, tiny_models)


def train(name, preset, tiny_models, tmp_path):
    return biaslens.run(
        "lei-train", str(tiny_models[name]), output=tmp_path / "run", preset=preset,
        train_sizes=(64,), learning_rates=(1e-3,), epochs=(1,), train_batch_size=16, top_k=1,
        dev_limit=4, tests=("ethnicity/noniid_test",), test_limit=4, data_dir=DATA,
        report=False, device="cpu", batch_size=4,
    )  # fmt: skip


def check_lei_train(name, preset, result, tiny_models) -> None:
    settings = result.settings
    if preset == "paper" and name == "roberta-qa":
        assert (
            settings["qa_order"] == "context-first" and settings["span_adjustment"] == "reference"
        )
    else:
        assert settings["qa_order"] == "question-first" and settings["span_adjustment"] == "none"
    model = LOADERS[name].from_pretrained(tiny_models[name]).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_models[name])
    # 1. the adversarial targets: x_dom from every template of the domain, read as training
    # reads its inputs (no span adjustment); under the preset as LEI's code reads them, with
    # the adversarial interventions, question first and span-adjusted
    from biaslens.methods.qa.data import lei

    split = lei.read_split(lei.split_path("religion/train_64", DATA / "lei"))
    checked = split.head(CHECKED_ROWS).to_dict("records")
    if preset == "paper":
        assert settings["dominant_from"] == "adversarial"
        file = DATA / "lei" / "interventions" / "religion_interventions.json"
        bias = naive_dominant(
            model, tokenizer, name, checked, {**settings, "qa_order": "question-first"},
            adversarial=json.loads(file.read_text())["adversarial"],
        )  # fmt: skip
        stored = "train_64_adversarial_interventions.parquet"
    else:
        bias = naive_dominant(
            model, tokenizer, name, checked, {**settings, "span_adjustment": "none"}
        )
        stored = "train_64_all_templates.parquet"
    stored = pd.read_parquet(result.run_dir / "references" / stored)
    assert len(stored) == len(split)
    for row, dominant in zip(checked, stored["dominant_q0"], strict=False):
        expected = 0 if bias[(row["first"], row["second"], row["attribute"])] > 0 else 1
        assert dominant == expected, row
    # 2. every evaluation row: μ per set from naive scores of the model that was evaluated
    evaluations = pd.read_csv(result.run_dir / "evaluations.csv")
    checkpoints = {"zero-shot": (model, tokenizer)}
    for cell in set(evaluations["checkpoint"]) - {"zero-shot"}:
        folder = result.run_dir / "checkpoints" / cell
        if folder.is_dir():
            checkpoints[cell] = (
                LOADERS[name].from_pretrained(folder).eval(),
                AutoTokenizer.from_pretrained(folder),
            )
    assert len(checkpoints) == 2  # the zero-shot model and the selected checkpoint
    for (checkpoint, evaluation), part in evaluations.groupby(["checkpoint", "evaluation"]):
        if checkpoint not in checkpoints:
            continue
        scores = pd.read_parquet(
            result.run_dir / "scores" / f"{checkpoint}__{evaluation.replace('/', '-')}.parquet"
        )
        m, t = checkpoints[checkpoint]
        for row in scores.to_dict("records"):
            expected = naive_score(name, m, t, row, row["question"], settings)
            assert (row["s_first"], row["s_second"]) == pytest.approx(expected, **CLOSE), row
        by_set = defaultdict(list)
        for row in scores.assign(pairing=scores["intervention_id"]).to_dict("records"):
            by_set[row["set"]].append(row)
        for record in part.to_dict("records"):
            expected = naive.unqover_metrics(by_set[record["set"]])["mu"]
            assert record["mu"] == pytest.approx(expected, rel=1e-9, abs=1e-12), record
