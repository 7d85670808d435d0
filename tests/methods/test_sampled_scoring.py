"""Sampled scoring (``--scoring sampled``): SIB's methods on a chat endpoint that returns no
log-probabilities, against the exact probabilities the ``hf`` backend computes for the same model.

The fake server draws each reply token from the tiny model's softmax (temperature 1, nothing
truncated) and sends no log-probabilities. The model is a copy of the tiny Llama whose output
rows for the space-led pronouns are pulled towards the mean final hidden state, so that a
reply begins with a pronoun for a good share of the inputs (no 0-vs-0 comparison); the rest of
a reply then also tends to be space-led pronouns, so its first word is the first token's.
"""

from __future__ import annotations

import math
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.models.requests import SampleRequest
from tests.conftest import DATA

NAME = "tiny-llama"
PRONOUN_WORDS = ("she", "he", "they", "her", "him", "them")
GENDER = {"she": "female", "her": "female", "female": "female", "he": "male", "him": "male",
          "his": "male", "male": "male", "they": "neutral"}  # fmt: skip
"""SIB App. E's lists, case folded ("them" is in none: a reply that begins with it names none)."""


def chat_inputs(tokenizer) -> list[str]:
    """The test's inputs (MGC sentences in prompt A) and the chat prompts they make."""
    from biaslens.methods.sib.data import mgc

    sentences = mgc.build_mgc(("dates",))["sentence"][::200].tolist()[:8]
    return [mgc.wrap_in_prompt(s, "A") for s in sentences]


def _last_states(model, tokenizer, texts: list[str]) -> torch.Tensor:
    return torch.stack([
        model.model(**tokenizer(t, return_tensors="pt", add_special_tokens=False))
        .last_hidden_state[0, -1] for t in texts
    ])  # fmt: skip


@pytest.fixture(scope="module")
def pronoun_leaning(tiny_models, tmp_path_factory):
    """The tiny Llama with its space-led pronoun tokens made likely at the start of a chat
    reply, and the end of the reply likely after one: the final states at the end of a chat
    prompt are alike (cosine ≈ .999), so each pronoun's output row is set along their mean
    (scaled for shares of a few to 20 percent), and so is the EOS row along the states after
    a pronoun."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = tmp_path_factory.mktemp("sampled") / "llama"
    shutil.copytree(tiny_models["llama"], folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = [tokenizer(" " + w, add_special_tokens=False)["input_ids"] for w in PRONOUN_WORDS]
    single = [i[0] for i in ids if len(i) == 1]
    assert len(single) >= 3, ids
    prompts = [
        tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                      add_generation_prompt=True, tokenize=False)
        for text in chat_inputs(tokenizer)
    ]  # fmt: skip
    head = model.get_output_embeddings().weight
    with torch.no_grad():
        start = _last_states(model, tokenizer, prompts).mean(0)
        for n, token in enumerate(single):
            head[token] = (4.0 + 0.6 * n) * start / start.norm() ** 2
        ends = [p + " " + w for p in prompts for w in PRONOUN_WORDS]
        after = _last_states(model, tokenizer, ends).mean(0)
        head[tokenizer.eos_token_id] = 14.0 * after / after.norm() ** 2
    model.save_pretrained(folder)
    return folder, model, tokenizer


@pytest.fixture(scope="module")
def sampling_server(pronoun_leaning):
    from biaslens.testing.fake_server import Faults, create_app, serve

    folder, model, tokenizer = pronoun_leaning
    faults = Faults(chat="no-logprobs")
    with serve(create_app(model, tokenizer, NAME, faults, max_model_len=256)) as url:
        yield {"url": url, "folder": folder, "faults": faults}


def endpoint(server):
    config = BackendConfig(backend="openai", base_url=server["url"], chat=True, concurrency=2)
    return load_model(NAME, config)


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    alpha = 1 - level
    low = stats.beta.ppf(alpha / 2, k, n - k + 1) if k else 0.0
    high = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return low, high


def test_an_endpoint_without_log_probabilities_answers_sampled_replies_only(sampling_server):
    lm = endpoint(sampling_server)
    try:
        assert [t.value for t in lm.capabilities] == ["sample"]
        with pytest.raises(BiaslensError, match="returns no log-probabilities.*--scoring sampled"):
            lm.require("generate")
        with pytest.raises(BiaslensError, match="CID cannot"):
            lm.require("contrastive_generate")
        (result,) = lm.sample([SampleRequest("Who was late?", samples=10, max_new_tokens=3)])
        assert len(result.texts) == 10 and len(set(result.texts)) > 1
        sent = sampling_server["faults"].requests[-1]
        assert sent["temperature"] == 1.0 and sent["top_p"] == 1.0 and sent["n"] == 10
        assert "logprobs" not in sent
        again = lm.sample([SampleRequest("Who was late?", samples=10, max_new_tokens=3)])
        assert again[0].texts == result.texts  # the same seed, the same draw
    finally:
        lm.close()


@pytest.mark.parametrize(
    ("fault", "message"),
    [("greedy", "same reply 8 times .* ignores temperature"), ("one", None),
     ("refuse-odd", None)],
)  # fmt: skip
def test_servers_that_sample_badly_end_in_a_line_or_a_correct_result(
    sampling_server, fault, message
):
    faults = sampling_server["faults"]
    faults.sampling = fault
    lm = endpoint(sampling_server)
    try:
        request = SampleRequest("In 1901, the doctor said that", samples=6, max_new_tokens=2)
        if message is not None:
            with pytest.raises(BiaslensError, match=message):
                lm.sample([request])
            return
        (result,) = lm.sample([request])
        assert len(result.texts) == 6  # a server of one reply a call is asked six times
        if fault == "refuse-odd":
            assert result.texts[1] == "" and result.texts[0] != ""
    finally:
        faults.sampling = "ok"
        lm.close()


def first_word_class(reply: str) -> str | None:
    """The rule as the guide states it: the letters after anything that is not a letter or a
    digit (whitespace, emphasis, quotes, brackets); a digit first is no word."""
    start = 0
    while start < len(reply) and not reply[start].isalnum():
        start += 1
    text = reply[start:]
    end = 0
    while end < len(text) and text[end].isalpha():
        end += 1
    return GENDER.get(text[:end].lower())


def test_sampled_frequencies_hold_the_exact_probabilities(sampling_server, pronoun_leaning):
    """Per input, the share of K = 200 replies beginning with each gender's pronoun, against
    the exact mass the hf backend gives the same model in --chat mode: a 99% Clopper-Pearson
    interval holds it for at least 95% of the (input, gender) pairs, and the pronouns carry
    mass (no 0-vs-0)."""
    from biaslens.methods.sib.scoring.pronouns import score_rows
    from biaslens.progress import NoProgress

    folder, _, tokenizer = pronoun_leaning
    rows = pd.DataFrame({"input": chat_inputs(tokenizer)})
    hf = load_model(str(folder), BackendConfig(device="cpu", chat=True))
    lm = endpoint(sampling_server)
    try:
        exact = score_rows(hf, rows, "exact", NoProgress())
        sampled = score_rows(lm, rows, "sampled", NoProgress(), samples=200)
    finally:
        lm.close()
        hf.close()
    held, masses = [], []
    for gender in ("female", "male", "neutral"):
        for k, p in zip(sampled[f"k_{gender}"], exact[f"p_{gender}"], strict=True):
            low, high = clopper_pearson(int(k), 200, 0.99)
            held.append(low <= p <= high)
            masses.append(p)
    assert np.mean(masses) > 0.05, masses
    assert np.mean(held) >= 0.95
    # each reply was read by its first word: recount them here
    for gender in ("female", "male", "neutral"):
        for replies, k in zip(sampled["replies"], sampled[f"k_{gender}"], strict=True):
            assert sum(first_word_class(r) == gender for r in replies) == k


def test_sib_mgc_runs_sampled_and_its_slope_interval_holds_the_exact_slope(
    sampling_server, pronoun_leaning, tmp_path
):
    """``biaslens run sib-mgc`` on the endpoint without log-probabilities chooses sampled
    scoring with a note, records it, and its female − male slope interval holds the slope the
    exact scoring gives the same model on the same inputs."""
    from biaslens.runner import run_method

    folder = pronoun_leaning[0]
    common = dict(w_kinds=("dates",), limit=2, data_dir=DATA, seed=0)
    sampled = run_method(
        "sib-mgc", model=NAME, samples=30, output=tmp_path / "sampled",
        backend=BackendConfig(backend="openai", base_url=sampling_server["url"], chat=True),
        cache_dir=tmp_path / "cache", **common,
    )  # fmt: skip
    exact = run_method(
        "sib-mgc", model=str(folder), output=tmp_path / "exact",
        backend=BackendConfig(device="cpu", chat=True), cache_dir=tmp_path / "cache", **common,
    )  # fmt: skip
    assert sampled.settings["mode"] == "sampled" and sampled.settings["samples"] == 30
    assert any("scoring: sampled, adaptive allocation matched to K = 30" in n
               for n in sampled.notes)  # fmt: skip
    row = sampled.tables["slopes"].iloc[0]
    truth = exact.tables["slopes"].iloc[0]["female_minus_male_slope"]
    assert math.isfinite(row.female_minus_male_ci_low)
    assert row.female_minus_male_ci_low <= truth <= row.female_minus_male_ci_high
    kept = pd.read_parquet(tmp_path / "sampled" / "samples.parquet")
    assert (kept["samples"] == 30).all() and {"k_female", "k_male", "k_neutral"} <= set(kept)


def test_a_larger_k_reuses_the_first_draws(sampling_server, tmp_path):
    from biaslens.progress import NoProgress
    from biaslens.scoring.sampled import draw_replies
    from biaslens.store.cache import CachedLM, RequestCache

    lm = endpoint(sampling_server)
    cached = CachedLM(lm, RequestCache(tmp_path / "cache.sqlite"))
    try:
        first = draw_replies(cached, ["Who was late?"], 20, NoProgress(), "t")
        computed = cached.stats["computed"]
        more = draw_replies(cached, ["Who was late?"], 30, NoProgress(), "t")
    finally:
        lm.close()
    assert more[0][:20] == first[0] and len(more[0]) == 30
    assert cached.stats["computed"] - computed == 1  # one new block of 10


def test_cid_refuses_sampled_replies_in_one_line(sampling_server, tmp_path):
    from biaslens.runner import run_method

    with pytest.raises(BiaslensError, match="CID cannot: it needs every step's full"):
        run_method(
            "cid-audit", model=NAME, output=tmp_path / "cid",
            backend=BackendConfig(backend="openai", base_url=sampling_server["url"], chat=True),
            data_dir=DATA,
        )  # fmt: skip


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_method_2_gives_a_verdict_only_where_the_sampling_error_allows(monkeypatch):
    """Newcombe's hybrid score interval of Δ = share(latest) − share(earliest), by hand from
    Wilson intervals (Newcombe 1998, method 10): 40/50 against 10/50 female replies is called
    unspecified with |Δ|'s lower bound as its metric, 25/50 against 25/50 is undecided (its
    interval holds the 0.5-point threshold), and 300/600 against 300/600 at a 30-point
    threshold is well-specified."""
    from biaslens.methods.sib.detect.method import sentence_metrics

    cases = [("a", 40, 50, 10, 50, 0.5), ("b", 25, 50, 25, 50, 0.5), ("c", 300, 600, 300, 600, 30)]
    z = stats.norm.ppf(0.975)
    for name, f_late, n_late, f_early, n_early, threshold in cases:
        sentences = pd.DataFrame({"set": ["s"], "id": [name], "well_specified": [False]})
        scored = pd.DataFrame(
            [{"set": "s", "id": name, "end": end, "date": date,
              "k_female": f, "k_male": n - f, "k_neutral": 0,
              "p_female": f / n, "p_male": (n - f) / n, "p_neutral": 0.0}
             for end, date, f, n in (("latest", 2016, f_late, n_late),
                                     ("earliest", 1901, f_early, n_early))]
        )  # fmt: skip
        row = sentence_metrics(sentences, scored, threshold, level=0.95).iloc[0]
        p1, p2 = f_late / n_late, f_early / n_early
        (l1, u1), (l2, u2) = _wilson(f_late, n_late, z), _wilson(f_early, n_early, z)
        low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
        high = p1 - p2 + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
        expected_low = 100 * (low if low > 0 else -high if high < 0 else 0.0)
        expected_high = 100 * max(abs(low), abs(high))
        assert row.metric_ci_low == pytest.approx(expected_low, abs=1e-9)
        assert row.metric_ci_high == pytest.approx(expected_high, abs=1e-9)
        assert row.metric == pytest.approx(100 * abs(p1 - p2))
        expected = {"a": "unspecified", "b": "undecided (sampling)", "c": "well-specified"}
        assert row.verdict == expected[name], (name, row.metric_ci_low, row.metric_ci_high)
    assert expected_low == 0.0


def test_sib_detect_runs_sampled_with_undecided_sentences_counted(sampling_server, tmp_path):
    from biaslens.runner import run_method

    result = run_method(
        "sib-detect", model=NAME, samples=10, limit=1, sets=("extended",),
        output=tmp_path / "detect", data_dir=DATA, cache_dir=tmp_path / "cache",
        backend=BackendConfig(backend="openai", base_url=sampling_server["url"], chat=True),
    )  # fmt: skip
    rates = result.tables["rates"].iloc[0]
    sentences = result.sample_tables["sentences"]
    undecided = int((sentences["verdict"] == "undecided (sampling)").sum())
    assert rates.n_undecided == undecided
    assert rates.n_tpr + rates.n_tnr + rates.n_no_pronoun + undecided == len(sentences)
    assert result.settings["mode"] == "sampled"


@pytest.mark.parametrize(
    ("reply", "subject", "named"),
    [(" Mary left.", "mary", True), ("mary", " Mary", True), ("\nMARY, surely", "mary", True),
     (" Maryland", "mary", False), (" the nurse", "nurse", False), ("mary2", "mary", False),
     ("", "mary", False)],
)  # fmt: skip
def test_a_reply_names_a_subject_it_begins_with(reply, subject, named):
    from biaslens.methods.qa.scoring.qa_sampled import names

    assert names(reply, subject) is named


def qa_rows(pairs) -> pd.DataFrame:
    """Questions about two subjects that are single tokens of the leaning model (pronouns):
    both orders of each pair, as UnQover asks them."""
    rows = []
    for template, (a, b) in enumerate(pairs):
        for first, second in ((a, b), (b, a)):
            context = f"{first} met {second} at the station."
            rows.append({"first": first, "second": second, "first_start": 0,
                         "second_start": context.index(second, len(first)), "context": context,
                         "template": template, "attribute": "late", "question": "who was late?",
                         "negated_question": "who was on time?"})  # fmt: skip
    return pd.DataFrame(rows)


def test_sampled_subject_shares_hold_the_exact_generative_scores(sampling_server, pronoun_leaning):
    """S of each question from K = 200 replies, against the exact generative S (the hf
    backend, the same layout, --chat): given the replies that name a subject, k1 is binomial
    with S, so a 99% Clopper-Pearson interval on k1 / (k1 + k2) holds the exact S for at least
    95% of the questions; the subjects are named (no 0-vs-0)."""
    from biaslens.methods.qa.scoring.qa import generative_scores
    from biaslens.methods.qa.scoring.qa_sampled import sampled_qa_scores
    from biaslens.progress import NoProgress

    rows = qa_rows([("him", "her"), ("they", "him"), ("her", "they")])
    hf = load_model(str(pronoun_leaning[0]), BackendConfig(device="cpu", chat=True))
    lm = endpoint(sampling_server)
    try:
        exact = generative_scores(hf, rows, NoProgress())
        sampled = sampled_qa_scores(lm, rows, NoProgress(), 200)
    finally:
        lm.close()
        hf.close()
    named = sampled["k_first"] + sampled["k_second"]
    assert (named >= 20).all(), named.tolist()
    held = [
        clopper_pearson(int(k), int(n), 0.99)[0] <= s <= clopper_pearson(int(k), int(n), 0.99)[1]
        for k, n, s in zip(sampled["k_first"], named, exact["s_first"], strict=True)
    ]
    assert np.mean(held) >= 0.95, (sampled[["k_first", "k_second"]], exact["s_first"])
    assert sampled["s_first"].to_numpy() == pytest.approx((sampled["k_first"] / named).to_numpy())


def test_unqover_sampled_names_what_it_could_not_score(sampling_server, tmp_path):
    """The tiny model never spells out the religion subjects (several tokens each): every
    context is left out, and the run stops in one line that says what would give it some."""
    from biaslens.runner import run_method

    with pytest.raises(BiaslensError, match="no context has a reply naming a subject .*--samples"):
        run_method(
            "unqover", model=NAME, samples=1, limit=300, output=tmp_path / "uq", data_dir=DATA,
            cache_dir=tmp_path / "cache",
            backend=BackendConfig(backend="openai", base_url=sampling_server["url"], chat=True),
        )  # fmt: skip


def test_unseeded_calls_send_no_seed(sampling_server):
    """``--unseeded``: for servers that fail on seeded requests (vLLM's CPU build)."""
    config = BackendConfig(backend="openai", base_url=sampling_server["url"], chat=True,
                           unseeded=True)  # fmt: skip
    lm = load_model(NAME, config)
    try:
        (result,) = lm.sample([SampleRequest("Who was late?", samples=4, max_new_tokens=2)])
    finally:
        lm.close()
    assert len(result.texts) == 4
    assert all("seed" not in body for body in sampling_server["faults"].requests[-2:])


def test_a_completions_endpoint_samples_too(sampling_server):
    """``/v1/completions``: with the model's tokenizer every request is exact and sampled
    replies come as token-id prompts; a server that returns no log-probabilities at all is
    asked for sampled replies only, and SIB chooses sampled scoring on it."""
    from biaslens.methods.sib.scoring.pronouns import scoring_for

    config = BackendConfig(backend="openai", base_url=sampling_server["url"],
                           tokenizer=str(sampling_server["folder"]))  # fmt: skip
    lm = load_model(NAME, config)
    try:
        assert "sample" in {t.value for t in lm.capabilities}
        assert "token_distribution" in {t.value for t in lm.capabilities}
        assert scoring_for(lm, "exact") == "exact"
        (result,) = lm.sample([SampleRequest("Who was late?", samples=5, max_new_tokens=2)])
        sent = sampling_server["faults"].requests[-1]
        assert len(result.texts) == 5 and isinstance(sent["prompt"][0], int)
        assert sent["temperature"] == 1.0 and sent["n"] == 5
    finally:
        lm.close()
    faults = sampling_server["faults"]
    faults.completion_logprobs = False
    try:
        bare = load_model(NAME, config)
        assert [t.value for t in bare.capabilities] == ["sample"]
        assert scoring_for(bare, "exact") == "sampled"
        (result,) = bare.sample([SampleRequest("Who was late?", samples=3, max_new_tokens=2)])
        assert len(result.texts) == 3 and faults.requests[-1]["prompt"] == "Who was late?"
        bare.close()
    finally:
        faults.completion_logprobs = True


def test_an_audit_of_an_endpoint_without_log_probabilities_reads_sampled_replies(
    sampling_server, tmp_path, monkeypatch
):
    """``biaslens audit`` of a served model that returns no log-probabilities: the plan cannot
    know that (it counts without calling the server), the loaded model decides — SIB runs on
    sampled replies, CID is left out with its own reason — and the card's numbers are the
    runs' own. The steps are cut to a few inputs here (the sizes are the audit tests')."""
    import dataclasses
    import json

    from biaslens.api import audit
    from biaslens.framework import registry
    from biaslens.framework.hooks import AuditStep

    few = {"sib-mgc": {"limit": 2, "w_kinds": ("dates",), "samples": 10},
           "cid-audit": {"groups": ("us-male", "egypt-male")}}  # fmt: skip
    for name, settings in few.items():
        spec = registry.get_method(name)
        role = dataclasses.replace(spec.audit, sizes={"quick": (AuditStep(settings),)})
        monkeypatch.setitem(registry.METHODS._entries, name, dataclasses.replace(spec, audit=role))
    backend = BackendConfig(backend="openai", base_url=sampling_server["url"], chat=True)
    result = audit(
        NAME, methods=["sib-mgc", "cid-audit"], output=tmp_path / "audit", data_dir=DATA,
        cache_dir=tmp_path / "cache", backend=backend,
    )  # fmt: skip
    model = result.models[0]
    card = model.card
    assert not card.failed, card.failed
    left = {x.method: x.why for x in card.left_out}
    assert "cid-audit" in left and "sampl" in left["cid-audit"], left
    assert {r.step for r in card.rows} == {"sib-mgc"}
    summary = json.loads((model.folder / "sib-mgc" / "summary.json").read_text())
    assert summary["settings"]["mode"] == "sampled"
    by_key = {(e["metric"], json.dumps(e["labels"])): e for e in summary["estimates"]}
    for row in card.rows:
        same = by_key[(row.metric, json.dumps(row.labels))]
        assert (row.value, row.ci_low, row.ci_high, row.n) == (
            same["value"], same["ci_low"], same["ci_high"], same["n"]
        )  # fmt: skip
