"""The results reference: generated from the declarations, current in docs/results.md, and a
check that finds what a run folder holds beyond it (every run the suite writes is checked by
the ``runs_match_the_results_reference`` fixture)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from biaslens.framework.registry import methods
from biaslens.store.output_files import OutputFile, check_run, reference
from tests.test_cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_docs_results_md_is_the_generated_reference():
    assert (ROOT / "docs" / "results.md").read_text() == reference(methods().values()), (
        "docs/results.md is stale: biaslens schema --markdown > docs/results.md"
    )


def test_every_method_declares_its_files_and_every_column_has_a_meaning():
    for name, spec in methods().items():
        assert spec.outputs, name
        for file in spec.outputs:
            assert file.what, (name, file.name)
            for column in (*file.columns, *file.optional):
                assert spec.meaning(file, column), (name, file.name, column)


@pytest.mark.odd_run_folder
def test_the_check_finds_an_undeclared_file_a_missing_and_an_unknown_column(tmp_path):
    files = (
        OutputFile("t.csv", "a table", ("a",), meanings={"a": "a value"}),
        OutputFile("s.parquet", "samples", ("b",), optional=("c",), meanings={"b": "x"}),
    )
    pd.DataFrame({"model": ["m"], "method": ["x"], "a": [1]}).to_csv(tmp_path / "t.csv")
    assert check_run(tmp_path, files) == ["t.csv: has Unnamed: 0, not in the reference"]
    pd.DataFrame({"model": ["m"], "method": ["x"], "a": [1]}).to_csv(
        tmp_path / "t.csv", index=False
    )
    pd.DataFrame({"d": [1]}).to_parquet(tmp_path / "s.parquet")
    (tmp_path / "extra.txt").write_text("?")
    assert check_run(tmp_path, files) == [
        "extra.txt: not in the reference",
        "s.parquet: lacks b",
        "s.parquet: has d, not in the reference",
        "s.parquet: no meaning for c",
    ]
    pd.DataFrame({"a": [1]}).to_csv(tmp_path / "t.csv", index=False)
    assert "t.csv: lacks model, method" in check_run(tmp_path, files)


def test_the_schema_command_lists_files_and_columns(monkeypatch, capsys):
    code, out, _ = run_cli(monkeypatch, capsys, "schema", "sib-mgc", "--markdown")
    assert code == 0
    assert "### `means_by_w.csv`" in out and "| `p_female_pct` | mean probability" in out
    code, out, err = run_cli(monkeypatch, capsys, "schema", "nope")
    assert code != 0 and "unknown method 'nope'" in out + err
