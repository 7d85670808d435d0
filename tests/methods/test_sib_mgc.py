"""MGC Method 1 end to end on tiny models of every LM kind, and on SmolLM2 (slow)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.errors import BiaslensError, ConfigMismatchError
from biaslens.methods.sib.data.pronouns import target_words
from biaslens.methods.sib.metrics.sib import mass_exact, mass_top_k
from biaslens.methods.sib.mgc.settings import make_settings
from biaslens.models import BackendConfig, TokenDistributionRequest
from tests.helpers import run_mgc

CPU = BackendConfig(device="cpu", batch_size=16)


DENOISER = CPU.with_options(model_kind="masked", input_prefix="[NLU] ")
"""UL2's denoiser mode: the slot is the first span sentinel, after the mode token."""


@pytest.mark.parametrize(
    ("name", "mode", "prompts", "backend"),
    [
        ("bert-mlm", "exact", None, CPU),
        ("bert-mlm", "paper", None, CPU),
        ("llama", "exact", ("A", "B"), CPU),
        ("gpt2", "paper", ("C",), CPU),
        ("t5", "exact", ("A",), CPU),
        ("bart", "exact", None, CPU),
        ("t5-denoiser", "paper", None, DENOISER),
    ],
)
def test_mgc_end_to_end_on_tiny_models(name, mode, prompts, backend, tiny_models, tmp_path):
    settings = make_settings(model=str(tiny_models[name]), mode=mode, prompts=prompts, limit=2)
    result = run_mgc(settings, tmp_path / "run", backend)
    n_prompts = len(prompts) if prompts else 1
    assert len(result.samples) == 100 * n_prompts  # 50 W values x 2 sentences x prompts
    probs = result.samples[["p_female", "p_male", "p_neutral"]]
    assert probs.ge(0).all().all() and probs.sum(axis=1).le(1 + 1e-9).all()
    mass = float(probs.to_numpy().sum() / len(probs))
    assert result.metrics["mean_pronoun_mass"] == pytest.approx(mass, rel=1e-12)
    assert any("of the model's probability at the slot" in n for n in result.notes) == (mass < 0.10)
    if mode == "exact":
        assert probs.sum(axis=1).gt(0).all()  # full-vocabulary mass is never exactly zero
    elif name in ("bert-mlm", "t5-denoiser"):  # paper mode, masked: the stored top-5's sum
        again = [
            mass_top_k(t, p)
            for t, p in zip(result.samples.top_tokens, result.samples.top_probs, strict=True)
        ]
        assert result.samples["p_female"].tolist() == pytest.approx([m["female"] for m in again])
    else:
        assert "generation" in result.samples
    assert len(result.fits) == 2 * n_prompts * 3  # W kinds x prompts x genders
    assert set(result.slopes.columns) >= {"female_minus_male_slope", "mean_r2"}
    for file in (
        "config.yaml",
        "samples.parquet",
        "fits.csv",
        "slopes.csv",
        "summary.json",
        "plots/mgc_dates.png",
        "plots/mgc_places.png",
    ):
        assert (tmp_path / "run" / file).is_file(), file
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["model"]["weights_sha256"] == result.summary["model"]["weights_sha256"]
    assert len(summary["dataset"]["sha256"]) == 64
    assert summary["metrics"]["num_sentences"] == 100
    stored = pd.read_parquet(tmp_path / "run" / "samples.parquet")
    assert stored["p_female"].tolist() == pytest.approx(result.samples["p_female"].tolist())


def test_rerun_reuses_the_cache_and_gives_identical_results(tiny_models, tmp_path):
    settings = make_settings(model=str(tiny_models["llama"]), limit=1)
    first = run_mgc(settings, tmp_path, CPU)
    assert first.cache_stats == {"cached": 0, "computed": 50}
    second = run_mgc(settings, tmp_path, BackendConfig(device="cpu", batch_size=5))
    assert second.cache_stats == {"cached": 50, "computed": 0}
    pd.testing.assert_frame_equal(first.fits, second.fits)


def test_interrupted_run_resumes(tiny_models, tmp_path, monkeypatch):
    from biaslens.store import cache as cache_module

    settings = make_settings(model=str(tiny_models["gpt2"]), limit=2, w_kinds=("dates",))
    monkeypatch.setattr(cache_module, "CHUNK", 16)  # chunks of exactly 16, whatever the speed
    monkeypatch.setattr(cache_module, "FIRST_CHUNK", 16)
    monkeypatch.setattr(cache_module, "CHUNK_SECONDS", 1e9)
    original = cache_module.RequestCache.put_many
    calls = {"n": 0}

    def put_then_stop(self, request_type, items):
        original(self, request_type, items)
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(cache_module.RequestCache, "put_many", put_then_stop)
    with pytest.raises(KeyboardInterrupt):
        run_mgc(settings, tmp_path, CPU)
    assert not (tmp_path / "summary.json").exists()
    monkeypatch.setattr(cache_module.RequestCache, "put_many", original)
    result = run_mgc(settings, tmp_path, CPU)
    assert result.cache_stats == {"cached": 32, "computed": 28}
    fresh = run_mgc(settings, tmp_path / "fresh", CPU)
    pd.testing.assert_frame_equal(result.fits, fresh.fits)


def test_exact_and_paper_agree_when_all_listed_tokens_are_in_the_top_k(tiny_backends):
    """With top-k = the whole vocabulary, the paper's top-k sum sees every listed word; in the
    uncased WordPiece vocabulary each listed word is exactly one token, so the two modes agree."""
    lm = tiny_backends["bert-mlm"]
    pairs = target_words(fills_slot=True)
    vocab = len(lm.tokenizer)
    texts = ["In 1801, [MASK] was a child.", "In Mali, [MASK] will become an adult."]
    results = lm.token_distribution(
        [TokenDistributionRequest(t, tuple(w for _, w in pairs), vocab) for t in texts]
    )
    for result in results:
        exact = mass_exact([g for g, _ in pairs], result.target_probs, result.target_ids)
        paper = mass_top_k(result.top_tokens, result.top_probs)
        assert exact == pytest.approx(paper, rel=1e-9)
        assert 0 < sum(exact.values()) < 1


def test_extractive_qa_model_is_refused(tiny_models, tmp_path):
    with pytest.raises(BiaslensError, match="extractive-QA model and cannot fill a pronoun slot"):
        run_mgc(make_settings(model=str(tiny_models["roberta-qa"])), tmp_path, CPU)
    assert not any(tmp_path.iterdir())


def test_prompts_with_masked_model_are_refused(tiny_models, tmp_path):
    with pytest.raises(BiaslensError, match="--prompt applies to causal and seq2seq models"):
        run_mgc(make_settings(model=str(tiny_models["bert-mlm"]), prompts=("A",)), tmp_path, CPU)


def test_output_with_a_different_config_is_refused_untouched(tiny_models, tmp_path):
    settings = make_settings(model=str(tiny_models["llama"]), limit=1, w_kinds=("places",))
    run_mgc(settings, tmp_path, CPU)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(ConfigMismatchError, match="different config"):
        run_mgc(settings.model_copy(update={"mode": "paper"}), tmp_path, CPU)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"limit": -1}, "invalid limit"),
        ({"prompts": ("Z",)}, "invalid prompts"),
        ({"w_kinds": ()}, "invalid w_kinds"),
        ({"mode": "fast"}, "invalid mode"),
    ],
)
def test_invalid_settings(values, message):
    with pytest.raises(BiaslensError, match=message):
        make_settings(**values)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "paper"])
def test_mgc_on_smollm2(mode, tmp_path):
    settings = make_settings(model="default", mode=mode, limit=1, w_kinds=("dates",))
    result = run_mgc(settings, tmp_path, BackendConfig(device="cpu"))
    assert result.summary["model"]["name"] == "smollm2-135m-instruct"
    assert result.summary["model"]["num_parameters"] == 134515008
    assert len(result.samples) == 30
    masses = result.samples[["p_female", "p_male", "p_neutral"]]
    if mode == "exact":
        # every sentence gets some full-vocabulary pronoun mass
        assert masses.gt(0).all().all()
    else:
        assert "generation" in result.samples
    assert set(result.fits["gender"]) == {"female", "male", "neutral"}
