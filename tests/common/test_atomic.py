"""Chunked Parquet writes: the file appears only when the block ends without an error, and an
error leaves no writer holding the temporary file."""

from __future__ import annotations

import gc
import warnings

import pandas as pd
import pyarrow.parquet as pq
import pytest

from biaslens.common.atomic import TEMP_SUFFIX, append_parquet


def test_appended_chunks_read_back_as_one_table(tmp_path):
    path = tmp_path / "samples.parquet"
    with append_parquet(path) as appender:
        appender.write(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}))
        appender.write(pd.DataFrame({"a": [3], "b": ["z"]}))
    assert appender.rows == 3
    table = pq.read_table(path).to_pandas()
    assert table["a"].tolist() == [1, 2, 3] and table["b"].tolist() == ["x", "y", "z"]
    assert pq.ParquetFile(path).num_row_groups == 2


def test_an_error_mid_write_leaves_neither_file_nor_open_writer(tmp_path):
    path = tmp_path / "samples.parquet"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unraisable close in __del__ would surface here
        with pytest.raises(KeyboardInterrupt):
            with append_parquet(path) as appender:
                appender.write(pd.DataFrame({"a": [1]}))
                raise KeyboardInterrupt
        assert appender._writer is None
        del appender
        gc.collect()
    assert not path.exists()
    assert not list(tmp_path.glob(f"*{TEMP_SUFFIX}"))


def test_changed_columns_are_refused(tmp_path):
    with pytest.raises(ValueError, match="differ"):
        with append_parquet(tmp_path / "s.parquet") as appender:
            appender.write(pd.DataFrame({"a": [1]}))
            appender.write(pd.DataFrame({"b": [1]}))
    assert not (tmp_path / "s.parquet").exists()
