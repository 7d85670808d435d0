"""Output to a file or a pipe (CI, nohup, a notebook): a plain progress line every few seconds
instead of bars that show nothing until the end, and whole tables and paths, never cut at 80
columns."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from biaslens.progress import PlainProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_progress_writes_a_line_per_interval_and_one_at_the_end():
    stream, clock = io.StringIO(), Clock()
    tick = PlainProgress(stream, interval=5.0, clock=clock).task("MGC exact (m)", 1800)
    for _ in range(12):  # 150 requests a second, for 12 seconds
        clock.now += 1.0
        tick(150)
    lines = stream.getvalue().splitlines()
    assert lines == [
        "MGC exact (m): 750/1,800 (42%) 150.0 req/s, 0:00:05 elapsed, eta 0:00:07",
        "MGC exact (m): 1,500/1,800 (83%) 150.0 req/s, 0:00:10 elapsed, eta 0:00:02",
        "MGC exact (m): 1,800/1,800 (100%) 150.0 req/s, 0:00:12 elapsed, eta —",
    ]


def test_a_piped_run_prints_progress_lines_and_whole_tables(tiny_models, tmp_path):
    model = tmp_path / ("a-model-folder-with-a-long-name-" + "x" * 60)
    model.symlink_to(tiny_models["llama"], target_is_directory=True)
    env = {**os.environ, "BIASLENS_PROGRESS_INTERVAL": "0", "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-m", "biaslens", "run", "sib-mgc", "--model", str(model), "--limit",
         "2", "--w", "dates", "-o", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("MGC exact")]
    assert len(progress) > 1 and "(100%)" in progress[-1]
    # a rate only once it rests on a second of work: a run this short shows none
    assert all(" req/s" not in line or "eta" in line for line in progress)
    lines = done.stdout.splitlines()
    assert any(str(model) in line for line in lines)  # the title whole, on one line
    assert max(len(line) for line in lines) > 80
    assert f"results: {tmp_path / 'run'}" in lines


def test_no_rate_from_batches_a_moment_apart():
    """Two batches answered a millisecond apart (from the cache) give no rate: a line shows
    counts and time until the rate rests on a second of work."""
    stream, clock = io.StringIO(), Clock()
    tick = PlainProgress(stream, interval=0.0, clock=clock).task("MGC exact (m)", 100)
    tick(50)
    clock.now += 0.001
    tick(49)
    clock.now += 2.0
    tick(1)
    lines = stream.getvalue().splitlines()
    assert lines[:2] == ["MGC exact (m): 50/100 (50%), 0:00:00 elapsed",
                         "MGC exact (m): 99/100 (99%), 0:00:00 elapsed"]  # fmt: skip
    assert lines[2] == "MGC exact (m): 100/100 (100%) 25.0 req/s, 0:00:02 elapsed, eta —"


def test_a_progress_interval_that_is_no_duration_is_named(monkeypatch):
    import pytest

    from biaslens.cli.render import with_progress
    from biaslens.errors import BiaslensError

    for value in ("abc", "-1", "inf"):
        monkeypatch.setenv("BIASLENS_PROGRESS_INTERVAL", value)
        with pytest.raises(BiaslensError, match="BIASLENS_PROGRESS_INTERVAL=.*0 or more"):
            with_progress(lambda progress: None)  # captured output: not a terminal


def test_a_line_comes_every_interval_from_the_start_ticks_or_not():
    """Before any task (the model loading), during a long first batch, and between ticks:
    a line whenever none came for the interval; rate and eta only from a second batch on
    (the first, with the warm-up in it, would give a wild eta)."""
    stream, clock = io.StringIO(), Clock()
    progress = PlainProgress(stream, interval=5.0, clock=clock)
    for _ in range(12):  # 12 s of model loading, a beat every second
        clock.now += 1.0
        progress.beat()
    tick = progress.task("MGC exact (m)", 1800)
    clock.now += 30.0
    progress.beat()  # the first batch is still running
    tick(100)  # the first batch, 30 s with its warm-up
    clock.now += 5.0
    tick(100)  # then 20 a second
    clock.now += 6.0
    progress.beat()
    assert stream.getvalue().splitlines() == [
        "starting (model and data): 0:00:05 elapsed",
        "starting (model and data): 0:00:10 elapsed",
        "MGC exact (m): 0/1,800 (0%), 0:00:30 elapsed",
        "MGC exact (m): 200/1,800 (11%) 20.0 req/s, 0:00:35 elapsed, eta 0:01:20",
        "MGC exact (m): 200/1,800 (11%) 9.1 req/s, 0:00:41 elapsed, eta 0:02:56",
    ]


def test_a_piped_run_speaks_from_its_start(tiny_models, tmp_path):
    """The first line comes before the first request is answered (the model is loading)."""
    env = {**os.environ, "BIASLENS_PROGRESS_INTERVAL": "0.05"}
    done = subprocess.run(
        [sys.executable, "-m", "biaslens", "run", "sib-mgc", "--model", str(tiny_models["llama"]),
         "--limit", "1", "--w", "dates", "-o", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "elapsed" in line]
    assert lines[0].startswith("starting (model and data): "), lines[:3]
    assert any(line.startswith("MGC exact") for line in lines)
