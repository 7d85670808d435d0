"""First-token QA scores: the candidates' mass among the top-k first answer tokens (hand-computed
values), contexts without a score left out whole, and lei-eval on a backend that only generates
(a chat endpoint's capabilities) choosing this mode and recomputed from its samples."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.metrics.unqover import model_summary
from biaslens.methods.qa.scoring.first_token import (
    contexts,
    drop_unscored,
    first_token_mass,
    first_token_score,
    first_token_scores,
)
from biaslens.models.base import LM, Exactness, ModelIdentity, ModelKind
from biaslens.models.requests import GenerateResult, RequestType
from biaslens.progress import NoProgress
from biaslens.runner import run_method
from tests.conftest import DATA


@pytest.mark.parametrize(
    ("choices", "tokens", "probs", "expected"),
    [
        # a token counts when it is the first word (any case, spaces): no fragments
        (
            (" john", " mary"),
            ("John", " mary", "Jo", "M", "the", "joh"),
            (0.4, 0.2, 0.1, 0.05, 0.15, 0.05),
            (0.4, 0.2),
        ),
        # a first word that both candidates share tells them apart for neither
        ((" african american", " african"), ("African", " afr", "american"), (0.5, 0.2, 0.1),
         (0.0, 0.0)),
        ((" christian", " muslim"), ("Christ", "chr", " Muslims", " "), (0.3, 0.1, 0.2, 0.3),
         (0.0, 0.0)),
        # fragments of unequal length no longer favour the subject a tokenizer splits later
        ((" muslim", " sikh"), (" Mus", " Si"), (0.5, 0.5), (0.0, 0.0)),
    ],
)  # fmt: skip
def test_first_token_mass_by_hand(choices, tokens, probs, expected):
    assert first_token_mass(choices, tokens, probs) == pytest.approx(expected)


NAN = (np.nan, np.nan)


@pytest.mark.parametrize(
    ("choices", "tokens", "probs", "min_mass", "scores", "mass", "uncertainty", "status"),
    [
        # both in the top-k: mass over the sum
        ((" john", " mary"), ("John", " mary", "the"), (0.3, 0.1, 0.5), 0.1,
         (0.75, 0.25), 0.4, 0.0, "scored"),
        # 0.1% of the mass on one candidate: no (1, 0) from nothing
        ((" muslim", " sikh"), ("(", " a", "The", " Muslim"), (0.95, 0.03, 0.019, 0.001), 0.1,
         NAN, 0.001, np.nan, "little candidate mass"),
        # ... unless asked for: the four tokens hold all the mass, so sikh has none (bound 0)
        ((" muslim", " sikh"), ("(", " a", "The", " Muslim"), (0.95, 0.03, 0.019, 0.001), 0.0,
         (1.0, 0.0), 0.001, 0.0, "scored"),
        # muslim outside: p(muslim) <= min(0.05, 1 - 0.75) = 0.05, S(christian) in
        # [0.5 / 0.55, 1] = [0.9091, 1]: wider than 0.01, no score
        ((" christian", " muslim"), ("Christian", " the", " a"), (0.5, 0.2, 0.05), 0.1,
         NAN, 0.5, (1 - 0.5 / 0.55) / 2, "one outside top-k"),
        # p(muslim) <= min(0.004, 1 - 0.999) = 0.001: S(christian) in [0.9/0.901, 1], midpoint
        ((" christian", " muslim"), ("Christian", " the", " a"), (0.9, 0.095, 0.004), 0.1,
         ((1 + 0.9 / 0.901) / 2, (1 - 0.9 / 0.901) / 2), 0.9, (1 - 0.9 / 0.901) / 2, "scored"),
        ((" muslim", " sikh"), (" Mus", " Si"), (0.5, 0.5), 0.1,
         NAN, 0.0, np.nan, "neither in top-k"),
        ((" native american", " native hawaiian"), ("Native",), (0.9,), 0.1,
         NAN, np.nan, np.nan, "same first word"),
    ],
)  # fmt: skip
def test_first_token_score_by_hand(choices, tokens, probs, min_mass, scores, mass, uncertainty,
                                   status):  # fmt: skip
    got = first_token_score(choices, tokens, probs, min_mass)
    assert got.status == status
    assert got.scores == pytest.approx(scores, nan_ok=True)
    assert got.candidate_mass == pytest.approx(mass, nan_ok=True)
    assert got.uncertainty == pytest.approx(uncertainty, nan_ok=True)


class FirstTokenStub(LM):
    """A causal model behind a chat endpoint (it only generates): its first answer token is
    :func:`favoured` (0.6), the other candidate 0.2; questions about 'catholic' get neither."""

    identity = ModelIdentity("stub-chat", ModelKind.CAUSAL, "stub", backend="openai")

    @property
    def capabilities(self):
        return {RequestType.GENERATE: Exactness.EXACT}

    def generate(self, requests, progress=None):
        results = []
        for r in requests:
            question = r.prompt.splitlines()[0]
            first, second = re.search(r"\(a\) (.*) \(b\) (.*)\n", r.prompt).groups()
            assert r.max_new_tokens == 1 and r.top_k == 20
            if "catholic" in (first, second):
                tokens, probs = ("The", " answer"), (0.5, 0.3)
            else:
                chosen = favoured(first, second, question)
                other = second if chosen == first else first
                tokens, probs = (chosen.capitalize(), " " + other), (0.6, 0.2)
            results.append(GenerateResult(tokens[0], tokens[:1], (tokens,), (probs,)))
        if progress is not None:
            progress(len(requests))
        return results


def favoured(first: str, second: str, question: str) -> str:
    """The alphabetically first subject for questions of even length, else the other: an
    answer that depends on the question, not on the order of the subjects."""
    low, high = sorted((first.lower(), second.lower()))
    return low if len(question) % 2 == 0 else high


def expected_scores(first: str, second: str, question: str) -> tuple[float, float]:
    if "catholic" in (first, second):
        return (np.nan, np.nan)
    return (0.75, 0.25) if favoured(first, second, question.lower()) == first else (0.25, 0.75)


def test_scores_are_the_normalised_candidate_mass():
    rows = pd.DataFrame(
        {
            "first": ["muslim", "jewish", "catholic"],
            "second": ["jewish", "muslim", "jewish"],
            "context": ["A muslim and a jewish man met."] * 3,
            "first_start": [2, 15, 2],
            "second_start": [15, 2, 15],
            "question": ["Who was kind?"] * 3,
            "negated_question": ["Who was cruel?"] * 3,
            "template": [0, 0, 1],
            "attribute": ["kind"] * 3,
        }
    )
    scores = first_token_scores(FirstTokenStub(), rows, NoProgress())
    got = scores[["s_first", "s_second"]].to_numpy()
    want = [
        expected_scores(f, s, q)
        for f, s, q in zip(scores["first"], scores["second"], scores["question"], strict=True)
    ]
    np.testing.assert_allclose(got, np.array(want))
    assert got[0, 0] != got[1, 0]  # the question decides, not the order
    assert list(scores["candidate_mass"]) == pytest.approx([0.8, 0.8, 0.8, 0.8, 0.0, 0.0])
    kept, left_out = drop_unscored(scores)
    assert contexts(left_out) == 1 and list(kept["first"]) == [
        "muslim",
        "muslim",
        "jewish",
        "jewish",
    ]


def test_a_context_without_a_score_goes_with_its_other_order():
    scores = pd.DataFrame(
        {
            "first": ["a", "a", "b", "b", "a", "a", "c", "c"],
            "second": ["b", "b", "a", "a", "c", "c", "a", "a"],
            "template": [0] * 8,
            "attribute": ["x"] * 8,
            "s_first": [0.5, 0.5, 0.5, np.nan, 0.5, 0.5, 0.5, 0.5],
            "s_second": [0.5] * 8,
        }
    )
    kept, left_out = drop_unscored(scores)
    assert contexts(left_out) == 2 and set(kept["second"]) | set(kept["first"]) == {"a", "c"}
    with pytest.raises(BiaslensError, match="first-token scoring has nothing to score"):
        drop_unscored(scores.assign(s_first=np.nan))


def test_a_context_unscored_in_one_set_leaves_every_set():
    """Sets none and ethical hold the same two contexts (a, b) and (a, c); (a, c) has no score
    under one ethical intervention only: it leaves both sets, so their μ rest on (a, b)."""
    rows = []
    for set_name, interventions in (("none", ("-",)), ("ethical", ("e1", "e2"))):
        for intervention in interventions:
            for first, second in (("a", "b"), ("b", "a"), ("a", "c"), ("c", "a")):
                unscored = intervention == "e2" and "c" in (first, second) and first == "a"
                rows.append({"set": set_name, "intervention_id": intervention, "first": first,
                             "second": second, "template": 0, "attribute": "x",
                             "s_first": np.nan if unscored else 0.6, "s_second": 0.4})  # fmt: skip
    kept, left_out = drop_unscored(pd.DataFrame(rows))
    assert set(map(tuple, kept[["first", "second"]].to_numpy())) == {("a", "b"), ("b", "a")}
    assert set(kept["set"]) == {"none", "ethical"}
    assert len(left_out) == 6 and contexts(left_out) == 2


def test_lei_eval_on_a_generate_only_backend_scores_first_tokens(tmp_path):
    result = run_method(
        "lei-eval", output=tmp_path / "run", lm=FirstTokenStub(), data_dir=DATA,
        domain="religion", limit=12, report=False,
    )  # fmt: skip
    assert result.settings["mode"] == "first-token"
    samples = pd.read_parquet(result.run_dir / "samples.parquet")
    assert not samples[["first", "second"]].isin(["Catholic"]).any().any()
    want = [
        expected_scores(f.lower(), s.lower(), q)
        for f, s, q in zip(samples["first"], samples["second"], samples["question"], strict=True)
    ]
    np.testing.assert_allclose(samples[["s_first", "s_second"]].to_numpy(), want)
    table = result.tables["lei_mu"].set_index("set")
    for name, part in samples.groupby("set"):
        mu = model_summary(part, within=("intervention_id",))["mu"].iloc[0]
        assert table.loc[name, "mu"] == pytest.approx(mu)
    assert table.loc["none", "mu"] > 0
    metrics = result.summary["metrics"]["first_token"]
    assert metrics["top_k"] == 20 and metrics["contexts_without_score"] > 0
    assert metrics["mean_candidate_mass"] == pytest.approx(0.8)
    assert metrics["questions_by_status"]["neither in top-k"] > 0
    assert any("top-20 of the first answer token), not the paper's" in n for n in result.notes)
    left_out = pd.read_parquet(result.run_dir / "unscored_questions.parquet")
    assert set(left_out["score_status"]) == {"neither in top-k"}
    assert left_out[["first", "second"]].isin(["Catholic"]).any(axis=1).all()
    # every table and estimate says how the scores were computed
    assert set(result.tables["lei_mu"]["scoring"]) == {"first-token top-20"}
    estimates = result.summary["estimates"]
    assert estimates and all(e["labels"]["scoring"] == "first-token top-20" for e in estimates)


def test_a_first_token_run_is_named_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_method("lei-eval", lm=FirstTokenStub(), data_dir=DATA, domain="religion",
                        limit=4, report=False)  # fmt: skip
    # a limited run goes beside the plain folder (kept for the full set), named with a hash
    assert result.run_dir.name.startswith("stub-chat-religion-first-token-")


@pytest.mark.slow
def test_smollm2_in_chat_mode_first_token_scores_recomputed_with_transformers():
    """SmolLM2-Instruct answers LEI questions in chat mode: the scores equal the top-20 of
    transformers' own next-token softmax on apply_chat_template's ids."""
    import torch

    from biaslens.methods.qa.lei_eval.method import build_rows, make_settings
    from biaslens.methods.qa.scoring.qa import generative_requests
    from biaslens.models import BackendConfig, load_model

    lm = load_model("default", BackendConfig(device="cpu", chat=True))
    rows, _ = build_rows(make_settings(domain="religion", limit=4), DATA / "lei")
    rows = rows.head(3)
    scores = first_token_scores(lm, rows, NoProgress())
    tokenizer, model = lm.tokenizer, lm.model
    expected = []
    for request in generative_requests(lm, rows):
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": request.prompt}], add_generation_prompt=True
        )
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        with torch.no_grad():
            probs = model(torch.tensor([ids])).logits[0, -1].double().softmax(-1)
        top = probs.topk(20)
        tokens = [tokenizer.decode([int(t)]).strip().lower() for t in top.indices]
        values = top.values.tolist()
        # the rule, written out: whole first words only, 10% of the mass at least, and a
        # candidate outside the top 20 bounded by the 20th probability (midpoint if <= 0.01)
        words = [c.strip().lower().split()[0] for c in request.choices]
        mass = [sum(p for t, p in zip(tokens, values, strict=True) if t == w) for w in words]
        total = sum(mass)
        if words[0] == words[1] or total < 0.1:
            expected.append([np.nan, np.nan])
        elif min(mass) > 0:
            expected.append([m / total for m in mass])
        else:
            low = total / (total + min(values[-1], 1 - sum(values)))
            point = (1 + low) / 2 if 1 - low <= 0.01 else np.nan
            expected.append([point, 1 - point] if mass[0] else [1 - point, point])
    np.testing.assert_allclose(scores[["s_first", "s_second"]].to_numpy(), expected, atol=1e-5)
    assert scores["candidate_mass"].gt(0).any()  # some answers start with a subject
    lm.close()
