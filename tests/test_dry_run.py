"""--dry-run: the requests and tokens a run would send, counted without loading the model or
calling a server (token counts recomputed here by hand), on every method that asks a model."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from click.testing import CliRunner
from transformers import AutoTokenizer

from biaslens.cli import app
from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig
from biaslens.models.runtime.dry_run import CHARS_PER_TOKEN
from biaslens.models.runtime.tokenization import chat_texts
from biaslens.runner import plan_method, run_method
from tests.conftest import DATA

NOWHERE = "http://127.0.0.1:9/v1"
"""A closed port: a dry run that called the server would fail."""


def counts(plan) -> dict:
    return plan.table.set_index("request_type")["requests"].to_dict()


def test_plan_counts_the_run_requests_and_tokens_by_hand(tiny_models, tmp_path):
    folder = str(tiny_models["llama"])
    plan = plan_method("sib-mgc", model=folder, limit=2, backend=BackendConfig(device="cpu"))
    real = run_method("sib-mgc", output=tmp_path / "run", model=folder, limit=2, report=False,
                      backend=BackendConfig(device="cpu"))  # fmt: skip
    assert counts(plan) == {"token_distribution": real.cache_stats["computed"]}
    prompts = pd.read_parquet(real.run_dir / "samples.parquet")["input"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    row = plan.table.iloc[0]
    assert row["prompt_tokens"] == sum(len(tokenizer(p)["input_ids"]) for p in prompts)
    assert row["completion_tokens_at_most"] == len(prompts)
    assert plan.counted_by == "the model's tokenizer"


def test_a_chat_endpoint_plan_without_a_tokenizer_counts_characters(tiny_models, tmp_path):
    config = BackendConfig(backend="openai", base_url=NOWHERE, chat=True)
    plan = plan_method("sib-mgc", model="hosted", mode="paper", limit=1, backend=config)
    real = run_method("sib-mgc", output=tmp_path / "run", model=str(tiny_models["llama"]),
                      mode="paper", limit=1, report=False,
                      backend=BackendConfig(device="cpu"))  # fmt: skip
    prompts = pd.read_parquet(real.run_dir / "samples.parquet")["input"]
    assert counts(plan) == {"generate": len(prompts)}
    row = plan.table.iloc[0]
    assert row["prompt_tokens"] == sum(math.ceil(len(p) / CHARS_PER_TOKEN) for p in prompts)
    assert row["completion_tokens_at_most"] == 20 * len(prompts)
    assert "4 characters per token" in plan.counted_by
    with pytest.raises(BiaslensError, match="chat/completions .* cannot answer token_distrib"):
        plan_method("sib-mgc", model="hosted", limit=1, backend=config)


def test_chat_template_tokens_are_counted_with_the_template(tiny_models):
    folder = str(tiny_models["llama"])
    config = BackendConfig(device="cpu", chat=True, system="Be brief.")
    plan = plan_method("sib-mgc", model=folder, mode="paper", limit=1, backend=config)
    plain = plan_method("sib-mgc", model=folder, mode="paper", limit=1,
                        backend=BackendConfig(device="cpu"))  # fmt: skip
    assert plan.counted_by == "the model's tokenizer and chat template"
    tokenizer = AutoTokenizer.from_pretrained(folder)
    templated = tokenizer(chat_texts(tokenizer, ["x"], "Be brief."), add_special_tokens=False)
    overhead = len(templated["input_ids"][0]) - len(tokenizer("x")["input_ids"])
    n = plan.table.iloc[0]["requests"]
    # the template adds the same tokens to every prompt (in place of the plain prompt's BOS)
    assert n == plain.table.iloc[0]["requests"]
    assert (
        plan.table.iloc[0]["prompt_tokens"] == plain.table.iloc[0]["prompt_tokens"] + n * overhead
    )


@pytest.mark.parametrize(
    ("method", "model", "values"),
    [
        ("lei-eval", "llama", {"domain": "religion", "limit": 4}),
        ("unqover", "roberta-qa", {"domain": "religion", "limit": 300}),
        ("sib-detect", "bert-mlm", {"limit": 4}),
        ("cid-audit", "llama", {"lams": (0.0, 5.0), "max_new_tokens": 2}),
    ],
)
def test_every_method_that_asks_a_model_plans(tiny_models, method, model, values, tmp_path):
    folder = str(tiny_models[model])
    plan = plan_method(method, model=folder, data_dir=DATA, **values)
    real = run_method(method, output=tmp_path / "run", model=folder, data_dir=DATA,
                      report=False, **values)  # fmt: skip
    assert plan.table["requests"].iloc[-1] == real.cache_stats["computed"] + real.cache_stats.get(
        "cached", 0
    )


def test_lei_train_has_nothing_to_plan(tiny_models):
    with pytest.raises(
        BiaslensError, match="lei-train fine-tunes the model in process: it sends no requests"
    ):
        plan_method("lei-train", model=str(tiny_models["roberta-qa"]), data_dir=DATA)


def test_the_cli_prints_the_plan_and_sends_nothing(tmp_path):
    result = CliRunner().invoke(
        app,
        ["run", "sib-mgc", "--mode", "paper", "--backend", "openai", "--chat",
         "--base-url", NOWHERE, "-m", "hosted", "--limit", "1", "--dry-run",
         "--output", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "│ generate │ 50 │" in output and "Nothing was loaded or sent" in output
    assert not (tmp_path / "run").exists()


def test_a_sampled_plan_counts_calls_and_its_cost_by_hand(tmp_path):
    """lei-eval sampled with fixed K = 25 on a chat endpoint: three calls per question (10 + 10
    + 5 replies), prompt tokens once per call at 4 characters a token, the completion tokens
    25 × 4 per question, and the cost at 0.15 / 0.60 per million, recomputed here."""
    config = BackendConfig(backend="openai", base_url=NOWHERE, chat=True)
    plan = plan_method("lei-eval", model="hosted", mode="sampled", samples=25, backend=config,
                       data_dir=DATA, split="noniid_dev", allocation="fixed")  # fmt: skip
    row = plan.table.set_index("request_type").loc["sample"]
    questions = row["requests"] // 3
    assert row["requests"] == 3 * questions and questions > 0
    assert row["completion_tokens_at_most"] == questions * 25 * 4
    assert any("one call asking its replies with n" in n for n in plan.notes)
    result = CliRunner().invoke(
        app,
        ["run", "lei-eval", "--qa-mode", "sampled", "--samples", "25", "--allocation", "fixed",
         "--backend", "openai",
         "--chat", "--base-url", NOWHERE, "-m", "hosted", "--split", "noniid_dev",
         "--data-dir", str(DATA), "--dry-run", "--price", "0.15,0.60",
         "--output", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    cost = (row["prompt_tokens"] * 0.15 + row["completion_tokens_at_most"] * 0.60) / 1e6
    shown = f"{cost:,.2f}" if cost >= 0.01 else f"{cost:.2g}"
    assert f"estimated cost: at most {shown} (" in " ".join(result.output.split())
    refused = CliRunner().invoke(app, ["run", "sib-mgc", "--price", "0.1", "--limit", "1"])
    assert "--price estimates a run's cost with --dry-run" in str(refused.exception)


def test_an_adaptive_sampled_plan_gives_its_expected_and_most_calls():
    """sib-mgc sampled, adaptive (the default) with K = 50 on 2 frames × 30 W × 2 prompts... by
    hand: 2 frames × (30 dates + 20 places) = 100 prompts; the placeholders answer alike, so
    the allocation is fixed K's: 100 pilot calls + 400 = 500 = 100 × 5; at most 100 × 10."""
    config = BackendConfig(backend="openai", base_url=NOWHERE, chat=True)
    plan = plan_method("sib-mgc", model="hosted", mode="sampled", limit=2, backend=config)
    prompts = 2 * (30 + 20)
    row = plan.table.set_index("request_type").loc["sample"]
    assert row["requests"] == prompts * 5
    said = next(n for n in plan.notes if "adaptive allocation" in n)
    assert f"{prompts * 5:,} calls" in said and f"to {prompts * 10:,} by the pilot" in said
    assert f"from {prompts:,}, the pilot alone" in said


@pytest.mark.parametrize(
    "price", ["-1", "nan", "1e309", "inf", "0.1,", "a,b", "1,2,3", "", "1e7", "0.1,-0.2"]
)
def test_a_bad_price_is_one_line_naming_it(price):
    from biaslens.runner.plan import parse_price

    with pytest.raises(BiaslensError) as refused:
        parse_price(price)
    message = str(refused.value)
    assert message.startswith("--price takes") and repr(price) in message and "\n" not in message


@pytest.mark.parametrize(("price", "expected"), [("0", (0.0, 0.0)), ("1e6", (1e6, 1e6)),
                                                 (" 0.15 , 0.60 ", (0.15, 0.6))])  # fmt: skip
def test_edge_prices_are_read(price, expected):
    from biaslens.runner.plan import parse_price

    assert parse_price(price) == expected
