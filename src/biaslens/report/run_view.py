"""Read a finished run directory for reporting: its headline tables, plots and samples.

Which tables headline a run, and how each is shown, comes from the method's declaration (its
``headlines``, each with its report view); a run of a method this biaslens does not know shows
every CSV table. A folder that is not a run,
a run that never finished or one written by a newer biaslens is a :class:`BiaslensError` with
one clear line, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from biaslens.errors import BiaslensError
from biaslens.framework.registry import find_method
from biaslens.store.result import RunResult

REPORT_SAMPLE_ROWS = 50_000
"""Per-sample rows a report reads at most (the first ones): a run of millions of samples is
reported in bounded memory; the note under the table says how many there are."""


@dataclass
class RunView:
    """What a report shows of one run directory."""

    result: RunResult
    tables: dict[str, tuple[str, pd.DataFrame]] = field(default_factory=dict)
    samples: pd.DataFrame | None = None
    total_samples: int = 0

    @property
    def root(self) -> Path:
        return self.result.run_dir

    @property
    def method(self) -> str:
        return self.result.method

    @property
    def summary(self) -> dict:
        return self.result.summary

    @property
    def settings(self) -> dict:
        return self.result.settings

    @property
    def plots(self) -> list[Path]:
        return self.result.plots

    @property
    def model_name(self) -> str:
        return self.result.model_name

    @property
    def label(self) -> str:
        return self.result.label


def load_run(root: Path | str) -> RunView:
    """The run in ``root`` with its headline tables (most important first) and samples."""
    result = RunResult.load(root)
    view = RunView(result)
    spec = find_method(result.method)
    for headline in spec.headlines if spec else ():
        if headline.table in result.tables:
            view.tables[headline.table] = (
                headline.title,
                _shown(result.tables[headline.table], headline),
            )
    if not view.tables:  # unknown method: every CSV table
        for name in result.tables:
            view.tables[name] = (name, result.tables[name])
    view.samples, view.total_samples = _first_samples(result)
    return view


def _first_samples(result: RunResult) -> tuple[pd.DataFrame | None, int]:
    """The first :data:`REPORT_SAMPLE_ROWS` rows of ``samples.parquet`` and its row count."""
    path = result.run_dir / "samples.parquet"
    if "samples" not in result.sample_tables or not path.is_file():
        samples = result.samples
        return samples, 0 if samples is None else len(samples)

    try:
        parquet = pq.ParquetFile(path)
        total = parquet.metadata.num_rows
        if total <= REPORT_SAMPLE_ROWS:
            return result.samples, total
        groups, rows = [], 0
        while rows < REPORT_SAMPLE_ROWS:  # only the row groups that hold the first rows
            groups.append(len(groups))
            rows += parquet.metadata.row_group(groups[-1]).num_rows
        first = parquet.read_row_groups(groups).slice(0, REPORT_SAMPLE_ROWS)
    except (OSError, ValueError) as error:
        raise BiaslensError(f"{path}: cannot read the per-sample table ({error})") from None
    return first.to_pandas(), total


RUN_COLUMNS = ("model", "method")
"""Columns every run table carries (:meth:`~biaslens.store.run.RunStore.labelled`); a run's
report names them once above its tables."""


def _shown(table: pd.DataFrame, headline) -> pd.DataFrame:
    """A headline table as the report shows it: without the columns named once above it, in
    the method's report view."""
    table = table.drop(columns=[c for c in RUN_COLUMNS if c in table])
    if headline.report is not None:
        table = headline.report(table)
    return table.reset_index(drop=True)
