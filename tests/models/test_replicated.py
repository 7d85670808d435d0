"""Data-parallel replicas on a local Ray runtime: the same answers as one process, and a
replica killed mid-run loses nothing."""

from __future__ import annotations

import os
import signal

import pytest

from biaslens.models import (
    BackendConfig,
    ChoiceLogprobsRequest,
    ContrastiveGenerateRequest,
    GenerateRequest,
    SpanScoresRequest,
    TokenDistributionRequest,
    load_model,
)
from tests.helpers import import_ray

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_runtime():
    ray = import_ray()
    from biaslens.models.runtime.ray_runtime import connect

    connect(None)
    yield ray
    ray.shutdown()


def replicated(folder, replicas=2):
    return load_model(
        str(folder), BackendConfig(device="cpu", batch_size=4, data_parallel=replicas)
    )


def _same(got, expected) -> bool:
    """Equal, floats within 1e-5 (batches of other shapes round differently)."""
    if isinstance(expected, float):
        return got == pytest.approx(expected, rel=1e-5, abs=1e-9)
    if isinstance(expected, tuple):
        return len(got) == len(expected) and all(map(_same, got, expected))
    return got == expected


PROMPTS = [f"In {year}, the nurse said that" for year in range(1901, 1941)]


def _requests(kind: str):
    if kind == "token_distribution":
        return [TokenDistributionRequest(p, (" she", " he"), 3) for p in PROMPTS]
    if kind == "choice_logprobs":
        return [ChoiceLogprobsRequest(p, (" she", " he was")) for p in PROMPTS]
    if kind == "generate":
        return [GenerateRequest(p, 4, 2) for p in PROMPTS[:12]]
    return [ContrastiveGenerateRequest(p, p + " not", 5.0, 4, 10) for p in PROMPTS[:12]]


@pytest.mark.parametrize(
    "kind", ["token_distribution", "choice_logprobs", "generate", "contrastive_generate"]
)
def test_two_replicas_answer_as_one_process(kind, ray_runtime, tiny_models, tiny_backends):
    lm = replicated(tiny_models["llama"])
    try:
        requests = _requests(kind)
        got = lm.answer(requests)
        expected = tiny_backends["llama"].answer(requests)
        assert lm.identity == tiny_backends["llama"].identity
        for a, b in zip(expected, got, strict=True):
            for field, value in vars(a).items():
                assert _same(getattr(b, field), value), field
    finally:
        lm.close()


def test_extractive_spans_on_replicas(ray_runtime, tiny_models, tiny_backends):
    lm = replicated(tiny_models["roberta-qa"])
    try:
        context = "Ann met Bob at the market."
        requests = [
            SpanScoresRequest(f"Who met Bob? {i}", context, ((0, 3), (8, 11))) for i in range(20)
        ]
        for a, b in zip(
            tiny_backends["roberta-qa"].span_scores(requests), lm.span_scores(requests), strict=True
        ):
            assert b.start_probs == pytest.approx(a.start_probs, rel=1e-5)
    finally:
        lm.close()


def test_a_replica_killed_mid_run_loses_nothing(ray_runtime, tiny_models, tiny_backends):
    lm = replicated(tiny_models["gpt2"])
    try:
        victim = lm.replica_pids()[1]
        killed = []

        def kill_after_the_first_shard(n: int) -> None:
            if not killed:
                os.kill(victim, signal.SIGKILL)
                killed.append(n)

        requests = _requests("token_distribution") * 3
        got = lm.token_distribution(requests, kill_after_the_first_shard)
        assert killed and len(lm.actors) == 1
        expected = tiny_backends["gpt2"].token_distribution(requests)
        assert [r.target_probs for r in got] == [
            pytest.approx(r.target_probs, rel=1e-5) for r in expected
        ]
    finally:
        lm.close()


def test_all_replicas_gone_is_a_clear_error(ray_runtime, tiny_models):
    from biaslens.errors import BiaslensError

    lm = replicated(tiny_models["gpt2"])
    for pid in lm.replica_pids():
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(BiaslensError, match="all 2 model replicas died; finished answers are kept"):
        lm.token_distribution(_requests("token_distribution"))


def test_a_method_run_with_data_parallel_replicas_equals_one_process(
    ray_runtime, tiny_models, tmp_path, monkeypatch, capsys
):
    from tests.test_cli import run_cli

    model = str(tiny_models["llama"])
    base = ("run", "sib-mgc", "--model", model, "--limit", "2", "--device", "cpu")
    code, _, err = run_cli(monkeypatch, capsys, *base, "-o", str(tmp_path / "one"))
    assert code == 0, err
    code, out, err = run_cli(
        monkeypatch, capsys, *base, "--data-parallel", "2", "-o", str(tmp_path / "two")
    )
    assert code == 0, err
    import json

    import pandas as pd

    one = pd.read_csv(tmp_path / "one" / "fits.csv")
    two = pd.read_csv(tmp_path / "two" / "fits.csv")
    pd.testing.assert_frame_equal(one, two, rtol=1e-4, atol=1e-5)  # batches round differently
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert summary["backend"]["data_parallel"] == 2
    assert (
        summary["model"]["fingerprint_sha256"]
        == json.loads((tmp_path / "one" / "summary.json").read_text())["model"][
            "fingerprint_sha256"
        ]
    )
