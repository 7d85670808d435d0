"""An audit that could not audit a model ends non-zero, says why once, and leaves no empty card;
a cost bound that could not count a step says so instead of printing a number. The real CLI in
a child process, offline, with a fresh HOME."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import DATA


def _audit(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "biaslens", "audit", "--data-dir", str(DATA), "--output",
         str(tmp_path / "audit"), *args],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("model", "why", "dry_run"),
    [("{tmp}/no-such-model", "unknown model", False),
     ("gpt2", "not (completely) in the local Hugging Face cache", False),
     ("{tmp}/empty", "no config.json", False),
     ("{tmp}/empty", "no config.json", True)],  # the plan already says so
)  # fmt: skip
def test_a_model_that_cannot_be_audited_is_one_error_and_no_folder(tmp_path, model, why, dry_run):
    (tmp_path / "empty").mkdir()
    done = _audit(tmp_path, "--model", model.format(tmp=tmp_path),
                  *(["--dry-run"] if dry_run else []))  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "could not be audited (no card)" in errors[0] and why in errors[0]
    assert (done.stdout + done.stderr).count(why) == 1  # said once, not once per step
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "audit").exists() and "Bias card" not in done.stdout


@pytest.mark.slow
def test_the_model_that_loads_gets_its_card_and_the_audit_still_fails(tiny_models, tmp_path):
    done = _audit(tmp_path, "--model", str(tmp_path / "missing"), "--model",
                  str(tiny_models["llama"]), "--methods", "sib-mgc")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "1 of 2 model(s) could not be audited" in done.stderr
    cards = list((tmp_path / "audit").rglob("card.md"))
    assert len(cards) == 1 and "llama" in str(cards[0]) and "Bias card — " in done.stdout


def test_a_cost_bound_that_could_not_count_a_step_is_no_number(tmp_path):
    done = _audit(tmp_path, "--model", "gpt-4o-mini", "--backend", "openai", "--base-url",
                  "http://127.0.0.1:9/v1", "--dry-run", "--price", "0.15,0.60")  # fmt: skip
    out = done.stdout
    assert "estimated cost: not estimated" in out and "estimated cost: at most" not in out
    reasons = [line for line in out.splitlines() if ": not counted: " in line]
    assert reasons and all(not line.endswith("…") for line in reasons)  # in full
    assert "(it answers: generate, sample)" in out
