"""Zero-shot LEI evaluation end to end on tiny models (and SmolLM2, marked slow)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.data.lei import read_split, split_path
from biaslens.errors import BiaslensError
from biaslens.experiments.lei_eval import make_lei_eval_settings, run_lei_eval
from biaslens.metrics.qa import squad_scores
from tests.conftest import DATA


def squad_file(path):
    context = "Alice and Bob went to the market. Bob bought apples."
    qas = [
        {"id": "1", "question": "Who bought apples?", "answers": [{"text": "Bob"}]},
        {"id": "2", "question": "Where did they go?", "answers": [{"text": "the market"}]},
    ]
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    return path


def test_religion_run_writes_every_set_and_resumes(tiny_backends, tmp_path):
    lm = tiny_backends["llama"]
    settings = make_lei_eval_settings(domain="religion", limit=12, model="tiny")
    result = run_lei_eval(settings, tmp_path / "run", lm=lm, data_dir=DATA)
    table = result.table.set_index("set")
    assert list(table.index) == ["none", "ethical", "adversarial", "irrelevant"]
    assert table.loc["ethical", "desired_mu"] == 0 and table.loc["adversarial", "desired_mu"] == 1
    assert table.loc["irrelevant", "desired_mu"] == pytest.approx(table.loc["none", "mu"])
    assert "religion" in result.summary["metrics"]["specified_absent"]
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    # every intervention type and category of the split survives the stratified limit
    split = read_split(split_path("religion/noniid_test", DATA / "lei"))
    strata = set(zip(split["intervention_type"], split["category"], strict=True))
    kept = samples[samples["set"] != "none"]
    assert set(zip(kept["set"], kept["category"], strict=True)) == strata
    assert result.plot == result.run_dir / "plots" / "lei_mu.png" and result.plot.stat().st_size > 0
    assert result.cache_stats["computed"] > 0
    again = run_lei_eval(settings, tmp_path / "run", lm=lm, data_dir=DATA)
    assert again.cache_stats["computed"] == 0
    pd.testing.assert_frame_equal(again.table, result.table)


def test_gender_run_has_specified_contexts_and_qa_utility(tiny_backends, tmp_path):
    settings = make_lei_eval_settings(
        domain="gender", limit=6, qa_file=squad_file(tmp_path / "qa.json")
    )
    result = run_lei_eval(
        settings, tmp_path / "run", lm=tiny_backends["roberta-qa"], data_dir=DATA,
        qa_file=tmp_path / "qa.json",
    )  # fmt: skip
    table = result.table.set_index("set")
    assert table.loc["specified", "desired_mu"] == 1
    assert 0 <= table.loc["specified", "specified_win_rate"] <= 1
    answered = pd.read_parquet(result.run_dir / "qa_predictions.parquet")
    expected = squad_scores(list(answered["prediction"]), [list(a) for a in answered["answers"]])
    assert result.summary["metrics"]["qa_utility"] == pytest.approx(expected)


def test_specifying_sentences_make_q_n_for_any_domain(tiny_backends, tmp_path):
    sentences = tmp_path / "s.tsv"
    sentences.write_text(
        "were mostly hateful extremists\t[subj] was seen shouting threats.\n"
        "were poor and wore dusty clothes\t[subj] could not pay the rent.\n"
    )
    settings = make_lei_eval_settings(domain="religion", specified_sentences=sentences)
    from biaslens.experiments.lei_eval import build_rows

    rows, absent = build_rows(settings, DATA / "lei", None, sentences)
    specified = rows[rows["set"] == "specified"]
    assert not absent and len(specified) > 0
    assert all(s in c for s, c in zip(specified["specified"], specified["context"], strict=True))


def test_bad_settings_are_clear_errors(tmp_path):
    with pytest.raises(BiaslensError, match="unknown domain 'caste'"):
        make_lei_eval_settings(domain="caste")
    with pytest.raises(BiaslensError, match="no LEI split 'train_64' for gender"):
        make_lei_eval_settings(domain="gender", split="train_64")
    with pytest.raises(BiaslensError, match="file not found"):
        make_lei_eval_settings(split_file=tmp_path / "missing.json")


@pytest.mark.slow
def test_smollm2_generative_lei_eval(tmp_path):
    settings = make_lei_eval_settings(domain="religion", limit=6)
    result = run_lei_eval(settings, tmp_path / "run", data_dir=DATA)
    table = result.table.set_index("set")
    assert result.summary["settings"]["mode"] == "generative"
    assert table["mu"].between(0, 1).all() and table["contexts"].gt(0).all()
