"""Results that read right: the finding first, every promised caution in every view, no
statistic beside an interval that it contradicts, and run folders that ``compare`` reads."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

import biaslens
from tests.conftest import DATA
from tests.test_cli import run_cli

pytestmark = pytest.mark.slow


def _first_lines(out: str) -> list[str]:
    """The terminal output less its progress and run-folder lines."""
    return [
        line for line in out.splitlines()
        if line.strip() and not line.startswith(("run folder:", "starting", "--limit "))
        and "elapsed" not in line
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "model", "args"),
    [
        ("sib-mgc", "llama", ("--w", "dates", "--limit", "2")),
        ("sib-detect", "llama", ("--limit", "1")),
        ("lei-eval", "gpt2", ("--limit", "4")),
    ],
)
def test_the_first_line_is_the_finding_with_its_interval(
    method, model, args, tiny_models, tmp_path, monkeypatch, capsys
):
    data = () if method == "sib-mgc" else ("--data-dir", str(DATA))
    code, out, err = run_cli(
        monkeypatch, capsys, "run", method, "-m", str(tiny_models[model]), *data,
        "-o", str(tmp_path / "run"), *args,
    )  # fmt: skip
    assert code == 0, err
    limit = [line for line in (out + err).splitlines() if line.startswith("--limit ")]
    assert len(limit) == 1 and "→" in limit[0], out  # what --limit kept, in the method's unit
    first = _first_lines(out)[0]
    assert first.startswith("finding: "), out[:2000]
    assert re.search(r"95% CI \[|no verdict|no value", first), first
    assert first.endswith(("evidence of bias", "no verdict", "reported without a verdict")), first


def test_a_sparse_lei_eval_run_carries_its_caution_in_every_view(
    tiny_models, tmp_path, monkeypatch, capsys
):
    """``--limit 4`` leaves one unit per (subject, attribute) cell: μ, η and θ4 are marked in
    the terminal, the table, summary.json's estimates, load_runs, the report and compare."""
    run = tmp_path / "runs" / "lei-eval" / "sparse"
    code, out, err = run_cli(
        monkeypatch, capsys, "run", "lei-eval", "-m", str(tiny_models["gpt2"]), "--limit", "4",
        "--data-dir", str(DATA), "-o", str(run),
    )  # fmt: skip
    assert code == 0, err
    table = pd.read_csv(run / "lei_mu.csv")
    assert (table["cell_units"] < 4).all() and table["caution"].str.startswith("sparse").all()
    assert "(sparse)" in out
    summary = json.loads((run / "summary.json").read_text())
    maxima = [e for e in summary["estimates"] if e["metric"] in ("mu", "eta", "theta4")]
    assert maxima and all(e["caution"] and e["caution"].startswith("sparse") for e in maxima)
    frame = biaslens.load_runs(str(run))
    assert frame[frame["metric"].isin(["mu", "eta", "theta4"])]["caution"].notna().all()
    report = (run / "report.html").read_text()
    assert "read with care" in report
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(monkeypatch, capsys, "compare", str(run), "-o", "cmp")
    assert code == 0 and "(sparse)" in out


def test_no_headline_view_shows_the_ols_p_value_beside_the_interval(
    tiny_models, tmp_path, monkeypatch, capsys
):
    """The reference code's OLS p-value (W values taken as independent) can say p < 0.05
    where the interval holds 0: it stays in fits.csv for the paper's comparison, and no view
    a reader reads shows it."""
    run = tmp_path / "run"
    code, out, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "-m", str(tiny_models["llama"]), "--w", "dates",
        "--limit", "2", "-o", str(run),
    )  # fmt: skip
    assert code == 0, err
    assert not (run / ".lock").exists()  # a finished run leaves no lock file behind
    assert "p_value" in pd.read_csv(run / "fits.csv").columns
    report = (run / "report.html").read_text()
    for text in (out, report):
        assert "p_value" not in text and "p-value" not in text.lower()
        assert "stderr" not in text


def test_a_run_without_a_model_goes_to_a_folder_compare_reads(
    tiny_models, tmp_path, monkeypatch, capsys
):
    """sib-toy's run folder is a run folder like the others' (runs/sib-toy/run), so the docs'
    ``compare runs/*/*`` reads it and says in one line why it has no row (a simulation,
    without headline values with intervals), beside a run that has some."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(monkeypatch, capsys, "run", "sib-toy", "--n", "2000")
    assert code == 0, err
    assert (tmp_path / "runs" / "sib-toy" / "run" / "summary.json").is_file()
    code, _, err = run_cli(monkeypatch, capsys, "run", "sib-mgc", "-m",
                           str(tiny_models["llama"]), "--w", "dates", "--limit", "2")  # fmt: skip
    assert code == 0, err
    code, out, err = run_cli(monkeypatch, capsys, "compare", "runs/*/*")
    assert code == 0, err
    skipped = [line for line in err.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and "runs/sib-toy/run" in skipped[0], err
    assert "no headline value with an interval" in skipped[0]
    assert "config.yaml" not in err and "no such run directory" not in err
