"""``--backend inspect``: a model of inspect_ai's model layer, asked as a chat model.

* ``openai-api/<service>/<model>`` through inspect's OpenAI-compatible provider against the
  tests' server (real HTTP): greedy replies with their top-k and seeded sampled replies equal,
  value for value, what the ``openai`` backend's chat endpoint gets from the same server;
* inspect's own ``mockllm`` provider, replying from a known distribution of pronouns and
  returning no log-probabilities: sampled replies only, SIB Method 1 runs end to end on them,
  a rerun reuses every answer, and the frequencies hold the known distribution;
* a model inspect cannot open, or a key variable that is not set, is one line.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ModelOutput,
    ModelUsage,
)
from scipy import stats

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, GenerateRequest, load_model
from biaslens.models.requests import SampleRequest
from tests.conftest import DATA
from tests.conftest import SERVED_NAME as NAME
from tests.helpers import message_lines

PROMPTS = ["Who is the nurse?", "In 1901, the doctor said that", "Complete: she"]
KEY = "test-inspect-key-0123"
SHARES = {"he": 0.5, "she": 0.3, "they": 0.2}
"""The mock model's reply distribution (every prompt alike)."""


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("BIASLENS_TEST_INSPECT_KEY", KEY)
    return "BIASLENS_TEST_INSPECT_KEY"


def through_inspect(served, key, **options):
    config = BackendConfig(backend="inspect", base_url=served["url"], api_key_env=key,
                           concurrency=2, **options)  # fmt: skip
    return load_model(f"openai-api/local/{NAME}", config)


def through_openai(served, **options):
    config = BackendConfig(backend="openai", base_url=served["url"], chat=True, concurrency=2,
                           **options)  # fmt: skip
    return load_model(NAME, config)


def test_greedy_replies_and_their_top_k_equal_the_chat_endpoints(served, key):
    ours, theirs = through_inspect(served, key), through_openai(served)
    try:
        assert ours.identity.backend == "inspect"
        assert [t.value for t in ours.capabilities] == ["generate", "sample"]
        requests = [GenerateRequest(p, max_new_tokens=5, top_k=5) for p in PROMPTS]
        mine, reference = ours.generate(requests), theirs.generate(requests)
        sent = served["faults"].requests[-len(PROMPTS) - 1 :]
    finally:
        ours.close()
        theirs.close()
    assert len(mine[0].tokens) > 0
    for a, b in zip(mine, reference, strict=True):
        assert a.text == b.text and a.tokens == b.tokens
        assert a.step_top_tokens == b.step_top_tokens and a.step_top_probs == b.step_top_probs
    assert any(r.get("top_logprobs") == 5 and r["temperature"] == 0.0 for r in sent)


def test_seeded_sampled_replies_equal_the_chat_endpoints(served, key):
    ours, theirs = through_inspect(served, key), through_openai(served)
    try:
        requests = [SampleRequest(p, samples=6, max_new_tokens=3, seed=11) for p in PROMPTS]
        mine, reference = ours.sample(requests), theirs.sample(requests)
        sent = served["faults"].requests[-1]
    finally:
        ours.close()
        theirs.close()
    assert [r.texts for r in mine] == [r.texts for r in reference]
    assert len(set(mine[0].texts)) > 1
    assert sent["n"] == 6 and sent["seed"] == 11 and sent["temperature"] == 1.0


def test_the_same_name_elsewhere_is_another_model(served, key):
    ours = through_inspect(served, key)
    other = BackendConfig(backend="inspect", base_url=served["url"].replace("127.0.0.1",
                          "localhost"), api_key_env=key)  # fmt: skip
    elsewhere = load_model(f"openai-api/local/{NAME}", other)
    try:
        assert ours.identity.cache_key() != elsewhere.identity.cache_key()
        assert KEY not in repr(ours.identity.recorded())
    finally:
        ours.close()
        elsewhere.close()


def pronouns(messages, tools, tool_choice, config) -> ModelOutput:
    """inspect's ``mockllm`` answering from :data:`SHARES`: ``num_choices`` replies drawn with
    the call's seed, no log-probabilities."""
    draw = random.Random(config.seed)
    words = draw.choices(list(SHARES), weights=list(SHARES.values()), k=config.num_choices or 1)
    return ModelOutput(
        model="model",
        choices=[ChatCompletionChoice(message=ChatMessageAssistant(content=f"{w} did it.",
                 model="model", source="generate"), stop_reason="stop") for w in words],
        usage=ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2),
    )  # fmt: skip


def mock(**options):
    config = BackendConfig(backend="inspect", model_args={"custom_outputs": pronouns}, **options)
    return load_model("mockllm/model", config)


def test_a_provider_without_log_probabilities_answers_sampled_replies_only():
    lm = mock()
    try:
        assert [t.value for t in lm.capabilities] == ["sample"]
        with pytest.raises(BiaslensError, match="no log-probabilities.*--scoring sampled"):
            lm.require("generate")
        (replies,) = lm.sample([SampleRequest("Who was late?", samples=400, seed=3)])
    finally:
        lm.close()
    assert len(replies.texts) == 400
    for word, share in SHARES.items():  # each share within its 99.9% binomial interval
        count = sum(t.startswith(word + " ") for t in replies.texts)
        low, high = stats.binom.interval(0.999, 400, share)
        assert low <= count <= high, (word, count)


def test_sib_mgc_runs_sampled_on_mockllm_and_a_rerun_reuses_every_answer(tmp_path):
    """Sampled SIB Method 1 through inspect: each sentence's female share is the replies
    beginning with "she" (the mock's 0.3), read again from the run's own samples table."""
    from biaslens.runner import run_method

    lm = mock()
    common = dict(model="mockllm/model", w_kinds=("dates",), limit=2, data_dir=DATA, seed=0,
                  samples=20, cache_dir=tmp_path / "cache", report=False)  # fmt: skip
    try:
        first = run_method("sib-mgc", output=tmp_path / "run", lm=lm, **common)
        again = run_method("sib-mgc", output=tmp_path / "run", lm=lm, **common)
    finally:
        lm.close()
    assert first.settings["mode"] == "sampled"
    assert first.summary["model"]["backend"] == "inspect"
    assert again.cache_stats["computed"] == 0 and again.cache_stats["cached"] > 0
    kept = pd.read_parquet(tmp_path / "run" / "samples.parquet")
    female, drawn = int(kept["k_female"].sum()), int(kept["samples"].sum())
    low, high = stats.binom.interval(0.999, drawn, SHARES["she"])
    assert low <= female <= high and kept["k_neutral"].sum() > 0


def test_a_model_inspect_cannot_open_is_one_line():
    with pytest.raises(BiaslensError, match="inspect cannot open the model 'nosuch/x'") as error:
        load_model("nosuch/x", BackendConfig(backend="inspect"))
    assert "\n" not in str(error.value)


def test_a_key_variable_that_is_not_set_is_one_line(monkeypatch):
    monkeypatch.delenv("BIASLENS_NO_SUCH_KEY", raising=False)
    config = BackendConfig(backend="inspect", api_key_env="BIASLENS_NO_SUCH_KEY")
    with pytest.raises(BiaslensError, match=r"\$BIASLENS_NO_SUCH_KEY is not set"):
        load_model("mockllm/model", config)


def test_the_command_line_audits_through_inspect_and_records_the_backend(
    served, key, monkeypatch, capsys, tmp_path
):
    """``biaslens run sib-mgc --backend inspect -m openai-api/local/<name> --base-url URL``:
    sampled SIB Method 1 through inspect's provider, whose answers a second run reuses;
    ``--batch`` on a provider without a batch mode is refused in one line."""
    from tests.test_cli import run_cli

    args = ("run", "sib-mgc", "--backend", "inspect", "-m", f"openai-api/local/{NAME}",
            "--base-url", served["url"], "--api-key-env", key, "--scoring", "sampled",
            "--samples", "10", "--w", "dates", "--limit", "1",
            "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
    code, out, err = run_cli(monkeypatch, capsys, *args, "--output", str(tmp_path / "a"))
    assert code == 0, err
    summary = (tmp_path / "a" / "summary.json").read_text()
    assert '"backend": "inspect"' in summary and KEY not in summary
    code, out, err = run_cli(
        monkeypatch, capsys, *args, "--max-requests", "1", "--output", str(tmp_path / "b")
    )
    assert code == 0, err
    assert "0 computed" in out + err
    code, out, err = run_cli(monkeypatch, capsys, *args, "--batch", "on")
    assert code != 0 and "openai-api provider has no batch mode" in err
    assert len(message_lines(err)) == 1


def test_batch_and_chat_settings_are_checked_in_one_line():
    with pytest.raises(BiaslensError, match="--batch takes on, off or a number"):
        BackendConfig(backend="inspect", batch="sometimes")
    with pytest.raises(BiaslensError, match="cannot run without --chat"):
        BackendConfig(backend="inspect", chat=False)
    assert BackendConfig(backend="inspect", batch="on").options.batch == 100
    assert BackendConfig(backend="inspect").options.chat is True
