"""A report reads at most the first REPORT_SAMPLE_ROWS per-sample rows, from only the row groups
that hold them, and knows how many there are."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pyarrow.parquet as pq

from biaslens.common.atomic import append_parquet
from biaslens.report import run_view


def _run_folder(tmp_path, groups: int, rows_per_group: int):
    with append_parquet(tmp_path / "samples.parquet") as appender:
        for g in range(groups):
            start = g * rows_per_group
            appender.write(pd.DataFrame({"row": range(start, start + rows_per_group)}))
    return SimpleNamespace(run_dir=tmp_path, sample_tables={"samples": None}, samples=None)


def test_only_the_first_rows_are_read_from_a_large_sample_table(tmp_path, monkeypatch):
    monkeypatch.setattr(run_view, "REPORT_SAMPLE_ROWS", 25)
    result = _run_folder(tmp_path, groups=10, rows_per_group=10)
    read = []

    class Counting(pq.ParquetFile):
        def read_row_groups(self, row_groups, *args, **kwargs):
            read.extend(row_groups)
            return super().read_row_groups(row_groups, *args, **kwargs)

    monkeypatch.setattr(pq, "ParquetFile", Counting)
    first, total = run_view._first_samples(result)
    assert total == 100
    assert first["row"].tolist() == list(range(25))
    assert read == [0, 1, 2]  # three row groups of ten hold the first 25 rows


def test_a_small_sample_table_is_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(run_view, "REPORT_SAMPLE_ROWS", 50)
    result = _run_folder(tmp_path, groups=2, rows_per_group=10)
    result.samples = pd.read_parquet(tmp_path / "samples.parquet")
    first, total = run_view._first_samples(result)
    assert total == 20 and first["row"].tolist() == list(range(20))


def test_asking_whether_a_run_has_a_table_does_not_read_it(tmp_path, monkeypatch):
    from biaslens.store import result as result_module

    path = tmp_path / "samples.parquet"
    pd.DataFrame({"row": [1, 2]}).to_parquet(path)
    tables = result_module.LazyTables({"samples": path})
    monkeypatch.setattr(
        "biaslens.common.files.read_table",
        lambda *a, **k: (_ for _ in ()).throw(AssertionError("read")),
    )
    assert "samples" in tables and "other" not in tables
    assert len(tables) == 1 and list(tables) == ["samples"]
