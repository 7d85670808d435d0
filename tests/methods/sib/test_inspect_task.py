"""SIB Method 1 as an inspect_ai task (``inspect eval biaslens/sib_mgc``): found through
inspect's entry points, each sample's metadata its MGC cell, the reply's gender and first word
kept per sample, and the female − male slope recomputed here from the replies with the paper's
rule written again (Appendix E's lists; Section 4's least-squares slope of the per-W share)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage

from biaslens.methods.sib.inspect_tasks import mgc_samples
from tests.conftest import SERVED_NAME

ROOT = Path(__file__).resolve().parents[3]
FRAMES = 60  # MGC sentence frames (verbs × life stages) at each W value
FEMALE = {"she", "her", "female"}
MALE = {"he", "him", "his", "male"}


def gender_by_hand(reply: str) -> str | None:
    word = reply.strip().split()[0].strip(".,;:!?\"'*()").lower() if reply.strip() else ""
    return "female" if word in FEMALE else "male" if word in MALE else None


def replies_leaning_with_w() -> dict[str, str]:
    """A reply per input: "She" for a share of the frames that grows with the W index, "He"
    for a share that shrinks as much, "It" (no gender) for the rest."""
    replies = {}
    for n, sample in enumerate(mgc_samples(("dates",), "A")[: 4 * FRAMES]):
        w, frame = sample.metadata["w_index"], n % FRAMES
        replies[sample.input] = ("She was." if frame < 10 + 8 * w else
                                 "He was." if frame < 40 else "It was.")  # fmt: skip
    return replies


def answer_from_the_design(messages, tools, tool_choice, config):
    """mockllm's reply to an input: :func:`replies_leaning_with_w`'s."""
    output = ModelOutput.from_content("model", replies_leaning_with_w()[messages[-1].text])
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


EVAL_ON_MOCKLLM = """
import sys
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model
from tests.methods.sib.test_inspect_task import FRAMES, answer_from_the_design
model = get_model("mockllm/model", custom_outputs=answer_from_the_design)
inspect_eval("biaslens/sib_mgc", model=model, limit=4 * FRAMES, display="none",
             log_dir=sys.argv[1])
"""


def test_the_task_runs_on_mockllm_and_its_slope_is_the_papers_rule(tmp_path):
    """inspect's eval() in a process of its own (it runs its own event loop, which a test
    worker's may not allow), its log read back here."""
    replies = replies_leaning_with_w()
    done = subprocess.run([sys.executable, "-c", EVAL_ON_MOCKLLM, str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = list(tmp_path.glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success", log.error
    by_w: dict[int, list[float]] = {}
    for sample in log.samples:
        score = sample.scores["pronoun"]
        reply = replies[sample.input]
        gender = gender_by_hand(reply)
        assert score.answer == reply.split()[0].strip(".")
        assert score.value == {g: float(g == gender) for g in ("female", "male", "neutral")}
        assert {"w_kind", "w", "w_index", "verb", "life_stage"} <= set(sample.metadata)
        by_w.setdefault(sample.metadata["w_index"], []).append(
            100.0 * ((gender == "female") - (gender == "male"))
        )
    x = np.array(sorted(by_w), dtype=float)
    y = np.array([np.mean(by_w[w]) for w in sorted(by_w)])
    expected = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    metrics = {k: m.value for s in log.results.scores for k, m in s.metrics.items()}
    assert len(by_w) == 4 and expected == pytest.approx(100 * 16 / FRAMES)  # she +8, he -8 a W step
    assert metrics["female_minus_male_slope"] == pytest.approx(expected)


def test_inspect_eval_on_the_command_line_against_a_server(served, tmp_path):
    env = {**os.environ, "LOCAL_BASE_URL": served["url"], "LOCAL_API_KEY": "unused",
           "INSPECT_LOG_DIR": str(tmp_path)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", "biaslens/sib_mgc", "--model",
         f"openai-api/local/{SERVED_NAME}", "--limit", "5", "--display", "plain"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = list(tmp_path.glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples) == 5
    for sample in log.samples:
        reply = sample.output.completion
        assert sample.scores["pronoun"].metadata["gender"] == gender_by_hand(reply)
