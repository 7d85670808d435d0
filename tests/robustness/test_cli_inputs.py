"""Command-line inputs: every bad value ends in one ``error:`` line with exit code 2, before a
run folder is made; Ctrl-C prints how to resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import message_lines
from tests.test_cli import run_cli


def _one_line_error(code, err, expected, folder=None):
    lines = message_lines(err)
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert expected in lines[0], err
    if folder is not None:
        assert not folder.exists(), f"{folder} was created"


NON_FINITE = [
    (("run", "sib-toy", "--alpha", "inf"), "--alpha"),
    (("run", "sib-toy", "--alpha", "nan"), "--alpha"),
    (("run", "sib-detect", "--threshold", "inf"), "--threshold"),
    (("run", "cid-sensitivity", "--tau", "nan"), "--tau"),
    (("run", "cid-audit", "--lam", "0", "inf"), "--lam"),
    (("run", "lei-train", "--lrs", "1e-5", "inf"), "--learning-rates"),
    (("run", "lei-train", "--qa-ratio", "inf"), "--qa-ratio"),
    (("cid", "--x", "a", "--x-prime", "b", "--lam", "nan"), "--lam"),
    (("cid", "--x", "a", "--x-prime", "b", "--temperature", "inf"), "--temperature"),
]


@pytest.mark.parametrize(("args", "option"), NON_FINITE, ids=[a[1] + a[-2] for a, _ in NON_FINITE])
def test_non_finite_numbers_are_refused_where_parsed(args, option, monkeypatch, capsys, tmp_path):
    out = tmp_path / "out"
    code, _, err = run_cli(
        monkeypatch, capsys, *args, *(("-o", str(out)) if args[0] == "run" else ())
    )
    _one_line_error(code, err, option.lstrip("-").split("-")[0], out)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("run", "sib-toy", "--seed", "-1"), "--seed: "),
        (("run", "sib-toy", "--n", "5"), "--n: "),
        (("run", "sib-mgc", "--limit", "-3"), "--limit: "),
        (("run", "sib-mgc", "--seed", "-1"), "--seed: "),
        (("run", "lei-eval", "--seed", "-2"), "--seed: "),
        (("run", "sib-detect", "--earliest", "2016", "--latest", "1901"), "--latest: "),
        (("run", "sib-mgc", "--prompt", "Z"), "--prompt: "),
        (("run", "sib-mgc", "--batch-size", "0"), "--batch-size must be >= 1"),
        (("run", "sib-mgc", "--backend", "nope"), "unknown backend 'nope'"),
        (("run", "sib-mgc", "--preset", "fastest"), "no preset 'fastest'"),
        (("run", "sib-mgc", "--device", "tpu9"), "unknown device"),
        (("run", "cid-audit", "--groups", "us-male"), "two name groups"),
    ],
)
def test_bad_values_fail_before_a_run_folder_is_made(args, expected, monkeypatch, capsys, tmp_path):
    out = tmp_path / "out"
    code, _, err = run_cli(monkeypatch, capsys, *args, "-o", str(out))
    _one_line_error(code, err, expected, out)


def test_report_rejects_bad_counts_and_paths(monkeypatch, capsys, tmp_path):
    from biaslens.methods.sib.toy import make_settings
    from tests.helpers import run_toy

    run_toy(make_settings(n=200), tmp_path / "run")
    code, _, err = run_cli(
        monkeypatch, capsys, "report", str(tmp_path / "run"), "--max-samples", "-1"
    )
    _one_line_error(code, err, "--max-samples")
    (tmp_path / "folder").mkdir()
    code, _, err = run_cli(
        monkeypatch, capsys, "report", str(tmp_path / "run"), "-o", str(tmp_path / "folder")
    )
    _one_line_error(code, err, "is a folder")
    (tmp_path / "file").write_text("x")
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "report",
        str(tmp_path / "run"),
        "-o",
        str(tmp_path / "file" / "r.html"),
    )
    _one_line_error(code, err, "is a file, not a folder")
    code, _, err = run_cli(monkeypatch, capsys, "report", str(tmp_path / "file"))
    _one_line_error(code, err, "no such run directory")


@pytest.mark.parametrize(
    "output",
    [
        lambda tmp: tmp / "a-file" / "run",  # under a file
        lambda tmp: tmp / "a-file",  # an existing file
        lambda tmp: "/proc/biaslens-nope/run",  # a place that cannot be written
    ],
    ids=["under a file", "a file", "unwritable"],
)
def test_output_paths_that_cannot_hold_a_run(output, monkeypatch, capsys, tmp_path):
    import matplotlib.pyplot as plt

    (tmp_path / "a-file").write_text("mine")
    open_before = len(plt.get_fignums())
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "sib-toy", "--n", "200", "-o", str(output(tmp_path))
    )
    lines = message_lines(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), err
    assert (tmp_path / "a-file").read_text() == "mine"
    assert len(plt.get_fignums()) == open_before  # the run's figures are closed, not leaked


def test_input_file_options_given_a_folder(monkeypatch, capsys, tmp_path, tiny_models):
    cases = [
        (("run", "sib-mgc", "--models-file", str(tmp_path)), "is a folder"),
        (("run", "lei-eval", "--split-file", str(tmp_path)), "is a folder"),
        (("run", "lei-eval", "--qa-file", str(tmp_path)), "is a folder"),
        (("metrics", "unqover", str(tmp_path)), "is a folder"),
        (("run", "cid-audit", "--names-file", str(tmp_path)), "is a folder"),
        (("run", "cid-sensitivity", "--sentences", str(tmp_path)), "is a folder"),
    ]
    for args, expected in cases:
        code, _, err = run_cli(
            monkeypatch, capsys, *args, *(("-o", str(tmp_path / "o")) if args[0] == "run" else ())
        )
        _one_line_error(code, err, expected)


def test_deprecated_spellings_still_work_with_a_note(monkeypatch, capsys, tmp_path, tiny_models):
    args = ("run", "sib-mgc", "--model", str(tiny_models["llama"]), "--limit", "1", "--w", "dates")
    code, out, err = run_cli(
        monkeypatch, capsys, *args, "--mode", "exact", "-o", str(tmp_path / "a")
    )
    assert code == 0 and "note: --mode is deprecated; use --scoring" in err
    code, out, err = run_cli(
        monkeypatch, capsys, "run", "lei-train", "--train-sizes", "64,256", "--lrs", "0"
    )
    assert (
        "note: --train-sizes a,b is deprecated" in err and "every learning rate must be > 0" in err
    )


INTERRUPTED_AFTER_FIRST_CHUNK = """
import os, signal, sys
from biaslens.store import cache
cache.CHUNK = 8
stored = cache.RequestCache.put_many
def store_then_interrupt(self, *args, **kwargs):
    stored(self, *args, **kwargs)
    if not getattr(cache, "interrupted", False):
        cache.interrupted = True
        os.kill(os.getpid(), signal.SIGINT)
cache.RequestCache.put_many = store_then_interrupt
from biaslens.cli import main
sys.argv[0] = "biaslens"
main()
"""
"""The command line, with a real SIGINT sent to its own process once the first chunk of 8
answers is stored: the same point of the run however fast the machine is."""


@pytest.mark.slow
def test_ctrl_c_prints_how_to_resume_and_the_rerun_resumes(tiny_models, tmp_path):
    """A real SIGINT to a real process in the middle of a run (30 requests, stored in chunks
    of 8): it exits 130 saying how to resume, and the same command again reuses the stored
    chunk and computes the rest."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    args = [
        "run", "sib-mgc", "--model", str(tiny_models["gpt2"]), "--output", str(tmp_path / "run"),
        "--batch-size", "4", "--device", "cpu", "--no-cache", "--w", "dates", "--limit", "1",
    ]  # fmt: skip
    interrupted = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_AFTER_FIRST_CHUNK, *args],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    err = interrupted.stderr
    assert interrupted.returncode == 130, err
    assert "interrupted: finished requests are kept in the run's cache" in err
    assert "Traceback" not in err
    assert not (tmp_path / "run" / "summary.json").exists()
    rerun = subprocess.run(
        [sys.executable, "-m", "biaslens.cli", *args], env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["requests"] == {"cached": 8, "computed": 22}
