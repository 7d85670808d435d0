"""A run killed with SIGKILL mid-way (the request cache's SQLite left with its ``-wal`` file)
resumes with the same command to the numbers of an uninterrupted run: every answer the killed
run had committed is reused, the rest are computed, and each estimate equals the uninterrupted
run's within the promise of ``docs/backends.md`` ("Resuming"): answers computed in other
batches (``--batch-size auto`` sizes its batches by what is left to do) differ only in float
rounding, so every value and bound agrees to within 1e-5 of the estimate's own interval width
(and 1e-9 absolutely)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow
TOLERANCE = 1e-5  # of the interval's width
FLOOR = 1e-9


def _command(model, output, cache) -> list[str]:
    return [sys.executable, "-m", "biaslens", "run", "sib-mgc", "--model", str(model),
            "--device", "cpu", "--batch-size", "auto", "--w", "dates", "--output", str(output),
            "--cache-dir", str(cache)]  # fmt: skip


def _answers(cache) -> int:
    for path in cache.glob("*.sqlite"):
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2) as db:
                return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        except sqlite3.Error:
            return 0
    return 0


def _estimates(folder) -> dict:
    summary = json.loads((folder / "summary.json").read_text())
    return {(e["metric"], json.dumps(e["labels"], sort_keys=True)): e for e in summary["estimates"]}


def test_a_killed_run_resumes_to_the_uninterrupted_numbers(tiny_models, tmp_path):
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    model = tiny_models["llama"]
    whole = subprocess.run(_command(model, tmp_path / "whole", tmp_path / "cache-whole"),
                           env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    total = _answers(tmp_path / "cache-whole")

    cache = tmp_path / "cache"
    child = subprocess.Popen(_command(model, tmp_path / "killed", cache), env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 300
    while _answers(cache) < total // 4 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    kept = _answers(cache)
    assert child.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert total // 4 <= kept < total, (kept, total)  # killed mid-way, answers committed

    resumed = subprocess.run(_command(model, tmp_path / "killed", cache), env=env,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert _answers(cache) == total
    got, want = _estimates(tmp_path / "killed"), _estimates(tmp_path / "whole")
    assert got.keys() == want.keys() and want
    worst = 0.0
    for key, expected in want.items():
        width = abs((expected["ci_high"] or 0.0) - (expected["ci_low"] or 0.0))
        for field in ("value", "ci_low", "ci_high"):
            a, b = got[key][field], expected[field]
            if b is None:
                assert a is None, (key, field)
                continue
            assert abs(a - b) <= FLOOR + TOLERANCE * width, (key, field, a, b, width)
            if width:
                worst = max(worst, abs(a - b) / width)
    print(f"killed after {kept} of {total} answers; largest difference {worst:.2g} of a width")
