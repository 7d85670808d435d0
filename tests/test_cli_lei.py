"""`biaslens metrics unqover` and `biaslens run lei-eval` from the command line."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.data.unqover_predictions import read_predictions
from biaslens.metrics.unqover import model_summary
from tests.conftest import DATA
from tests.data.test_unqover_predictions import dump
from tests.test_cli import _one_line_error, run_cli


def test_metrics_unqover_prints_and_writes_the_definitions(tmp_path, monkeypatch, capsys):
    dump(tmp_path / "p.json")
    code, out, _ = run_cli(
        monkeypatch,
        capsys,
        "metrics",
        "unqover",
        str(tmp_path / "p.json"),
        "-o",
        str(tmp_path / "tables"),
    )
    assert code == 0 and "UnQover metrics" in out and "0.2500" in out
    written = pd.read_csv(tmp_path / "tables" / "model.csv")
    expected = model_summary(read_predictions(tmp_path / "p.json"))
    assert written["mu"].iloc[0] == pytest.approx(expected["mu"].iloc[0])
    assert (tmp_path / "tables" / "cluster_attribute.csv").is_file()


def test_metrics_unqover_bad_file_is_one_line(tmp_path, monkeypatch, capsys):
    data = dump(tmp_path / "p.json")
    data[next(iter(data))].pop("q1")
    (tmp_path / "p.json").write_text(json.dumps(data))
    code, _, err = run_cli(monkeypatch, capsys, "metrics", "unqover", str(tmp_path / "p.json"))
    _one_line_error(code, err, "lacks q1")


def test_lei_eval_runs_and_rejects_bad_input(tiny_models, tmp_path, monkeypatch, capsys):
    data = str(DATA)
    code, out, _ = run_cli(
        monkeypatch,
        capsys,
        "run",
        "lei-eval",
        "-m",
        str(tiny_models["gpt2"]),
        "--limit",
        "4",
        "--data-dir",
        data,
        "-o",
        str(tmp_path / "run"),
    )
    assert code == 0 and "LEI μ" in out and "adversarial" in out
    assert "no specified-context data for religion" in out.replace("\n", " ")
    code, _, err = run_cli(monkeypatch, capsys, "run", "lei-eval", "--domain", "caste")
    _one_line_error(code, err, "unknown domain 'caste'")
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "run",
        "lei-eval",
        "-m",
        str(tiny_models["bert-mlm"]),
        "--limit",
        "2",
        "--data-dir",
        data,
        "-o",
        str(tmp_path / "r2"),
    )
    _one_line_error(code, err, "needs an extractive-QA, seq2seq or causal model")


def test_lei_train_runs_from_the_command_line(tiny_models, tmp_path, monkeypatch, capsys):
    args = ["run", "lei-train", "-m", str(tiny_models["llama"]), "--train-sizes", "64"]
    args += ["--lrs", "1e-4", "--epochs", "1", "--dev-limit", "4", "--test-limit", "4"]
    args += ["--tests", "ethnicity/noniid_test", "--data-dir", str(DATA)]
    code, out, _ = run_cli(monkeypatch, capsys, *args, "-o", str(tmp_path / "run"))
    assert code == 0 and "Selected checkpoints" in out and "n64-lr0.0001-ep1" in out
    assert (tmp_path / "run" / "results.csv").is_file()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--lrs", "0"], "every learning rate must be > 0"),
        (["--lrs", "1e-5", "fast"], "--learning-rates: expected numbers"),
        (["--qa-file", "missing.json"], "missing.json: file not found"),
        (["--qa-mode", "generative", "--reference", "file"], "needs --reference model"),
    ],
)
def test_lei_train_bad_input_is_one_line(
    tiny_models, tmp_path, monkeypatch, capsys, extra, expected
):
    args = ["run", "lei-train", "-m", str(tiny_models["llama"]), "--train-sizes", "64"]
    args += ["--data-dir", str(DATA), "-o", str(tmp_path / "run"), *extra]
    code, _, err = run_cli(monkeypatch, capsys, *args)
    _one_line_error(code, err, expected)
    assert not (tmp_path / "run" / "checkpoints").exists()
