"""``biaslens compare`` and ``biaslens.load_runs``: runs of several methods and two models of
different classes in one tidy table with intervals and n; incomplete and foreign folders are
listed and skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import biaslens
from tests.test_cli import run_cli


@pytest.fixture
def runs(tiny_models, unqover_data, tmp_path):
    common = dict(device="cpu", report=False)
    for name in ("roberta-qa", "llama"):  # an extractive QA model and a causal LM
        biaslens.run(
            "unqover", str(tiny_models[name]), output=tmp_path / "runs" / f"unqover-{name}",
            data_dir=unqover_data, limit=30, bootstrap=200, **common,
        )  # fmt: skip
    biaslens.run(
        "sib-mgc", str(tiny_models["gpt2"]), output=tmp_path / "runs" / "mgc-llama",
        w_kinds=("dates",), limit=2, **common,
    )  # fmt: skip
    (tmp_path / "runs" / "not-a-run").mkdir()
    (tmp_path / "runs" / "not-a-run" / "config.yaml").write_text("method: sib-mgc\n")
    return tmp_path / "runs"


def test_load_runs_is_one_row_per_run_and_value(runs):
    with pytest.warns(UserWarning, match="skipped .*not-a-run"):
        frame = biaslens.load_runs(str(runs / "*"))
    assert [p for p, _ in frame.attrs["skipped"]] == [str(runs / "not-a-run")]
    unqover = frame[frame["method"] == "unqover"]
    assert unqover["model"].nunique() == 2 and len(unqover) == 2 * 5
    for run, part in unqover.groupby("run"):
        summary = json.loads((runs / Path(run).name / "summary.json").read_text())
        table = pd.read_csv(runs / Path(run).name / "unqover.csv").iloc[0]
        for row in part.itertuples():
            assert row.value == pytest.approx(table[row.metric])
            # (an interval that is not there is NaN in both, with the reason in the table)
            assert row.ci_low == pytest.approx(table[f"{row.metric}_ci_low"], nan_ok=True)
            assert row.ci_high == pytest.approx(table[f"{row.metric}_ci_high"], nan_ok=True)
            if row.ci_low != row.ci_low:
                assert isinstance(table[f"{row.metric}_ci_note"], str)
            assert row.n == table["units"]
            assert row.ci_level == 0.95 or row.ci_low != row.ci_low  # no interval: no level
        assert summary["dataset"]["name"] == "unqover-religion"
    fits = frame[(frame["method"] == "sib-mgc") & (frame["metric"] == "slope")]
    assert len(fits) % 3 == 0 and fits["labels"].is_unique  # female, male, neutral per prompt
    assert fits["labels"].str.contains("gender=female").any()
    assert (fits["ci_low"] <= fits["value"]).all() and (fits["value"] <= fits["ci_high"]).all()


def test_compare_prints_one_table_and_writes_csv_and_plot(runs, tmp_path, monkeypatch, capsys):
    out = tmp_path / "cmp"
    args = ("compare", str(runs / "unqover-*"), "-o", str(out))
    code, printed, _ = run_cli(monkeypatch, capsys, *args)
    assert code == 0
    assert "roberta-qa" in printed and "llama" in printed and "μ" in printed
    table = pd.read_csv(out / "compare.csv")
    assert set(table["metric"]) == {"mu", "eta", "theta4", "delta", "epsilon"}
    assert (out / "compare.png").stat().st_size > 1000


def test_one_column_per_model_unless_a_method_has_two_runs_of_it():
    from biaslens.report.runs_frame import comparison_table

    def row(run, method, model, value):
        return dict(run=f"runs/{method}/{run}", method=method, model=model, symbol="x",
                    labels="", value=value, ci_low=None, ci_high=None, n=10)  # fmt: skip

    frame = pd.DataFrame(
        [
            row("a1", "sib-detect", "A", 0.1),
            row("a2", "lei-eval", "A", 0.2),
            row("b1", "sib-detect", "B", 0.3),
        ]  # fmt: skip
    )
    assert list(comparison_table(frame).columns) == ["method", "symbol", "labels", "A", "B"]
    twice = pd.concat([frame, pd.DataFrame([row("a3", "lei-eval", "A", 0.4)])], ignore_index=True)
    columns = list(comparison_table(twice).columns)[3:]
    assert columns == ["A (a1)", "A (a2)", "B", "A (a3)"]
