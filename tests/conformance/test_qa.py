"""UnQover's probe and zero-shot LEI on every model class the papers used (extractive QA,
masked LM filling the subject slot, causal and seq2seq generative QA), with the defaults and
with ``--preset paper``: every score recomputed by one naive forward pass per question, every
metric by plain-Python loops over UnQover's definitions."""

from __future__ import annotations

import math
import shutil

import pandas as pd
import pytest
from transformers import (
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForQuestionAnswering,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

import biaslens
from tests.conformance import naive
from tests.conformance.leaning import leaning_copy
from tests.conftest import DATA

LOADERS = {
    "roberta-qa": AutoModelForQuestionAnswering,
    "bert-mlm": AutoModelForMaskedLM,
    "llama": AutoModelForCausalLM,
    "t5": AutoModelForSeq2SeqLM,
}
MODE = {"roberta-qa": "extractive", "bert-mlm": "fill-mask", "llama": "causal", "t5": "seq2seq"}
PRESETS = [None, "paper"]
CLOSE = {"rel": 1e-4, "abs": 1e-7}
TIGHT = {"rel": 1e-9, "abs": 1e-12}


@pytest.fixture(scope="module")
def qa_models(leaning_models, tiny_models, tiny_name_data, tmp_path_factory) -> dict:
    """The tiny models, the masked LM's copy ranking she, he and they among its top 5 on about
    a third of the very fill-mask inputs these tests score (UnQover's gender questions), so
    that the paper's top-10 he/she rule acts on some rows and not on others."""
    root = tmp_path_factory.mktemp("qa-models")
    drawn = biaslens.run(
        "unqover", str(tiny_models["bert-mlm"]), output=root / "draw", limit=12, report=False,
        device="cpu", domain="gender", data_dir=tiny_name_data,
        subjects=("tiny_female", "tiny_male"),
    )  # fmt: skip
    samples = pd.read_parquet(drawn.run_dir / "samples.parquet")
    texts = sorted(set(samples["context"] + " " + samples["question"]))
    return {
        **leaning_models,
        "bert-mlm": leaning_copy(tiny_models["bert-mlm"], root / "bert-mlm", "mlm", [texts]),
    }


@pytest.fixture(scope="module")
def plain(qa_models):
    """Each tiny model and tokenizer straight from transformers."""
    return {
        name: (loader.from_pretrained(qa_models[name]).eval(),
               AutoTokenizer.from_pretrained(qa_models[name]))
        for name, loader in LOADERS.items()
    }  # fmt: skip


@pytest.fixture(scope="module")
def tiny_name_data(tmp_path_factory, unqover_data):
    """The UnQover lists (two attributes per activity list) plus gender names the tiny BERT has
    as single tokens."""
    data = tmp_path_factory.mktemp("data")
    shutil.copytree(unqover_data / "unqover", data / "unqover")
    subjects = data / "unqover" / "word_lists" / "nouns" / "subjects"
    (subjects / "tiny_female").write_text("[subj] female | Alice\n")
    (subjects / "tiny_male").write_text("[subj] male | Bob\n[subj] male | doctor\n")
    return data


def naive_score(name: str, model, tokenizer, row: dict, question: str, settings: dict):
    """(S(first), S(second)) of one context and question, from one forward pass."""
    mode = MODE[name]
    first, second = row.get("first_text", row["first"]), row.get("second_text", row["second"])
    context, intervention = row["context"], row.get("intervention") or ""
    if mode == "extractive":
        asked = naive.lei_question(question, intervention)
        spans, counts = [], []
        for text, start in ((first, int(row["first_start"])), (second, int(row["second_start"]))):
            end = start + len(text)
            starts, ends = naive.span_alternatives(context, start, end, settings["span_adjustment"])
            spans += [(a, end) for a in starts] + [(start, b) for b in ends]
            counts.append((len(starts), len(ends)))
        # one forward pass reads both subjects' spans (the same question and context)
        probs = naive.extractive_span_probs(
            model, tokenizer, asked, context, spans, settings["qa_order"] == "context-first"
        )
        out = []
        for n_starts, n_ends in counts:
            p_starts = [p for p, _ in probs[:n_starts]]
            p_ends = [p for _, p in probs[n_starts : n_starts + n_ends]]
            probs = probs[n_starts + n_ends :]
            out.append(max(math.sqrt(a * b) for a in p_starts for b in p_ends))
        return tuple(out)
    if mode == "fill-mask":
        text = f"{context} {question}"
        probs = naive.slot_distribution(model, tokenizer, text, "mlm")
        top_k = settings["fill_mask_top_k"]
        ranked = naive.top_k(tokenizer, probs, top_k or 10)
        out = []
        for subject, cluster in ((first, row["first_cluster"]), (second, row["second_cluster"])):
            token = naive.slot_token(tokenizer, text, subject, "mlm")
            if token is None:
                out.append(math.nan)
                continue
            if top_k is None:
                score = probs[token]
            else:
                score = _first_listed(ranked, subject)
            if settings["pronouns"]:
                words = ("she", "She") if cluster.lower().startswith("female") else ("he", "He")
                if top_k is None:
                    ids = {naive.slot_token(tokenizer, text, w, "mlm") for w in words} - {None}
                    pronoun = sum(probs[i] for i in ids)  # a token counts once (uncased: she)
                else:
                    pronoun = max(_first_listed(ranked, w) for w in words)
                score = max(score, pronoun)
            out.append(score)
        return tuple(out)
    causal = mode == "causal"
    prompt = naive.unifiedqa_text(question, first, second, context, intervention, causal)
    choices = naive.answer_texts(first, second, causal)
    logps = [naive.choice_logprob(model, tokenizer, prompt, c, not causal) for c in choices]
    top = max(logps)
    weights = [math.exp(v - top) for v in logps]
    return tuple(w / sum(weights) for w in weights)


def _first_listed(ranked, word: str) -> float:
    for token, prob in zip(*ranked, strict=True):
        if token.strip().lower() == word.strip().lower():
            return prob
    return 0.0


def check_scores(name, plain, samples: pd.DataFrame, settings: dict):
    """Every stored score equals the naive one (each row holds its question: the attribute
    question or its negation)."""
    model, tokenizer = plain[name]
    for row in samples.to_dict("records"):
        expected = naive_score(name, model, tokenizer, row, row["question"], settings)
        got = (row["s_first"], row["s_second"])
        assert got == pytest.approx(expected, nan_ok=True, **CLOSE), (row, expected)


def unqover(name, preset, models, data, tmp_path):
    options = {"domain": "religion", "data_dir": data}
    if name == "bert-mlm":  # the tiny BERT knows these names as single tokens
        options = {"domain": "gender", "data_dir": data, "subjects": ("tiny_female", "tiny_male")}
    if preset == "pronouns":  # exact scores with the reference's he/she rule
        preset, options["pronouns"] = None, True
    return biaslens.run(
        "unqover", str(models[name]), output=tmp_path / "run", preset=preset, limit=12,
        report=False, device="cpu", batch_size=4, **options,
    )  # fmt: skip


def check_unqover(name, plain, result):
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    assert len(samples) >= 8
    check_scores(name, plain, samples, result.settings)
    expected = naive.unqover_metrics(samples.to_dict("records"))
    table = pd.read_csv(result.run_dir / "unqover.csv").iloc[0]
    for metric, value in expected.items():
        assert table[metric] == pytest.approx(value, **TIGHT), metric
    return samples


@pytest.mark.parametrize(
    ("name", "preset"),
    [(name, preset) for name in LOADERS for preset in PRESETS] + [("bert-mlm", "pronouns")],
)
def test_unqover_numbers_recomputed(name, preset, plain, qa_models, tiny_name_data, tmp_path):
    result = unqover(name, preset, qa_models, tiny_name_data, tmp_path)
    settings = result.settings
    if preset == "paper":
        assert settings["span_adjustment"] == ("reference" if name == "roberta-qa" else "none")
        assert settings["fill_mask_top_k"] == (10 if name == "bert-mlm" else None)
        assert settings["pronouns"] is (name == "bert-mlm")
    samples = check_unqover(name, plain, result)
    if settings.get("pronouns"):  # the he/she rule acts: p(she/he) beats the name somewhere
        model, tokenizer = plain[name]
        without = {**settings, "pronouns": False}
        changed = [
            row for row in samples.to_dict("records")
            if naive_score(name, model, tokenizer, row, row["question"], without)
            != pytest.approx((row["s_first"], row["s_second"]), nan_ok=True)
        ]  # fmt: skip
        assert len(changed) >= len(samples) // 10, (len(changed), len(samples))


@pytest.mark.parametrize(
    ("name", "preset", "patch", "value"),
    [
        # the he/she rule reads the other gender's pronoun
        ("bert-mlm", "pronouns", "biaslens.methods.qa.scoring.qa.PRONOUNS",
         {"female": ("he", "He"), "male": ("she", "She")}),
        # the reference's span adjustment without its suffixes (man, woman, …)
        ("roberta-qa", "paper", "biaslens.methods.qa.scoring.spans.REFERENCE_SUFFIXES", ()),
        # a causal model's UnifiedQA input with another answer cue
        ("llama", None, "biaslens.methods.qa.scoring.qa.CAUSAL_ANSWER_CUE", "\nAnswer:"),
    ],
)  # fmt: skip
def test_the_unqover_check_fails_when_a_rule_is_broken(name, preset, patch, value, plain,
                                                       qa_models, tiny_name_data, tmp_path,
                                                       monkeypatch):  # fmt: skip
    monkeypatch.setattr(patch, value)
    result = unqover(name, preset, qa_models, tiny_name_data, tmp_path)
    with pytest.raises(AssertionError):
        check_unqover(name, plain, result)


def lei_eval(name, preset, models, tmp_path):
    return biaslens.run(
        "lei-eval", str(models[name]), output=tmp_path / "run", preset=preset,
        domain="religion", limit=6, data_dir=DATA, report=False, device="cpu", batch_size=4,
    )  # fmt: skip


def check_lei_eval(name, plain, result):
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    check_scores(name, plain, samples, result.settings)
    table = pd.read_csv(result.run_dir / "lei_mu.csv").set_index("set")
    records = samples.assign(pairing=samples["intervention_id"]).to_dict("records")
    by_set: dict[str, list] = {}
    for record in records:
        by_set.setdefault(record["set"], []).append(record)
    assert set(by_set) == set(table.index) == {"none", "ethical", "adversarial", "irrelevant"}
    for set_name, rows in by_set.items():
        expected = naive.unqover_metrics(rows)
        for metric, value in expected.items():
            assert table.loc[set_name, metric] == pytest.approx(value, **TIGHT), (set_name, metric)
    # irrelevant: the desired μ is the no-intervention μ over the same contexts
    irrelevant = {
        (r["first"], r["second"], r["template"], r["attribute"]) for r in by_set["irrelevant"]
    }
    same = [
        r
        for r in by_set["none"]
        if (r["first"], r["second"], r["template"], r["attribute"]) in irrelevant
    ]
    assert table.loc["irrelevant", "desired_mu"] == pytest.approx(
        naive.unqover_metrics(same)["mu"], **TIGHT
    )
    assert table.loc["ethical", "desired_mu"] == 0 and table.loc["adversarial", "desired_mu"] == 1


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", ["roberta-qa", "llama", "t5"])
def test_lei_eval_numbers_recomputed(name, preset, plain, qa_models, tmp_path):
    check_lei_eval(name, plain, lei_eval(name, preset, qa_models, tmp_path))


@pytest.mark.parametrize("name", ["roberta-qa", "t5"])
def test_the_lei_eval_check_fails_without_the_interventions_wording(
    name, plain, qa_models, tmp_path, monkeypatch
):
    """LEI writes the intervention after "Note that, " before the question (extractive) and
    after the context as "note that …" (UnifiedQA): each dropped, the check fails."""
    import biaslens.methods.qa.scoring.qa as qa

    encode = qa.unifiedqa_input
    monkeypatch.setattr(qa, "intervene_question", lambda q, i: f"{i} {q}" if i else q)
    monkeypatch.setattr(qa, "unifiedqa_input", lambda q, a, b, c, i, causal: encode(
        q, a, b, f"{c} {i}" if i else c, "", causal))  # fmt: skip
    with pytest.raises(AssertionError):
        check_lei_eval(name, plain, lei_eval(name, None, qa_models, tmp_path))
