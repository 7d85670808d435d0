"""One result shape for every method: :class:`RunResult`, from a fresh run or a run folder.

``result.fits`` (or ``result["fits"]``, ``result.tables["fits"]``) is a result table,
``result.samples`` the per-sample table (others: ``result.sample_tables``); ``result.metrics``
the summary's metrics. A loaded run reads its tables on
first access, so opening a run with millions of samples costs nothing until they are asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.common.files import read_text
from biaslens.common.structured import load_json
from biaslens.errors import BiaslensError
from biaslens.store import manifest
from biaslens.store import summary as record
from biaslens.store.run import (
    CONFIG_FILE,
    SUMMARY_FILE,
    check_format_version,
    inside_run,
    read_config,
)


class LazyTables(Mapping):
    """Tables of a run folder by name, read from ``NAME.csv`` / ``NAME.parquet`` when first
    asked for (a damaged file is a one-line error naming it)."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self._paths = paths
        self._loaded: dict[str, pd.DataFrame] = {}

    @classmethod
    def of(cls, tables: Mapping[str, pd.DataFrame | Path]) -> LazyTables:
        """Tables given as frames (kept) or as the paths of their files (read when asked)."""
        lazy = cls({name: t for name, t in tables.items() if isinstance(t, Path)})
        for name, table in tables.items():
            if not isinstance(table, Path):
                lazy._paths[name] = Path(name)
                lazy._loaded[name] = table
        return lazy

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._loaded:
            from biaslens.common.files import read_table

            self._loaded[name] = read_table(self._paths[name], f"run table {name!r}")
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        """Whether the run has the table, without reading it (``Mapping``'s default would)."""
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


@dataclass
class RunResult:
    """A finished run: where it is, what it was asked, what it found.

    * ``tables``: the small result tables (CSV), by name, also as attributes (``result.fits``);
      ``sample_tables``: per-sample tables (Parquet), by name; ``samples`` is the main one.
    * ``summary``: ``summary.json`` (metrics, model identity, backend settings, dataset hash,
      request counts, versions), as read and written through
      :class:`~biaslens.store.summary.RunSummary` (:attr:`record`); ``metrics`` is its
      ``metrics`` part.
    * ``cache_stats``: requests computed and reused from the request cache in this run.
    """

    run_dir: Path
    method: str
    settings: dict[str, Any]
    summary: dict[str, Any]
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    sample_tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    plots: list[Path] = field(default_factory=list)
    cache_stats: dict[str, int] = field(default_factory=dict)
    report: Path | None = None
    notes: list[str] = field(default_factory=list)
    """One-line findings of the method (printed by the CLI under the headline tables)."""

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name in self.tables:
            return self.tables[name]
        if name in self.sample_tables:
            return self.sample_tables[name]
        known = ", ".join([*self.tables, *self.sample_tables]) or "none"
        raise KeyError(f"{self.method} run has no table {name!r} (it has: {known})")

    def __getattr__(self, name: str) -> pd.DataFrame:
        if name.startswith("_") or name in ("tables", "sample_tables"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as error:
            raise AttributeError(str(error)) from None

    @property
    def samples(self) -> pd.DataFrame | None:
        """The per-sample table (``samples.parquet``), if the method writes one."""
        return self.sample_tables.get("samples")

    @property
    def record(self) -> record.RunSummary:
        """The summary as its typed model (fields documented in :mod:`biaslens.store.summary`)."""
        return record.RunSummary.model_validate(self.summary)

    @property
    def metrics(self) -> dict[str, Any]:
        return self.summary.get("metrics", {})

    @property
    def model_name(self) -> str:
        model = self.summary.get("model")
        return model.get("name", "?") if isinstance(model, dict) else str(model or "—")

    @property
    def label(self) -> str:
        return f"{self.run_dir.name} ({self.model_name})"

    @classmethod
    def load(cls, root: Path | str) -> RunResult:
        """The run in ``root``, checked: a biaslens run of a known format that finished."""
        root = Path(root)
        if not root.is_dir():
            raise BiaslensError(f"{root}: no such run directory")
        if not (root / CONFIG_FILE).is_file():
            raise BiaslensError(f"{root}: not a biaslens run directory (no {CONFIG_FILE})")
        config = read_config(root)  # raises for a newer format
        summary_path = inside_run(root, SUMMARY_FILE)
        if not summary_path.is_file():
            raise BiaslensError(
                f"{root}: the {config['method']} run is incomplete (no {SUMMARY_FILE}); run the "
                "same command again to resume and finish it"
            )
        summary = load_json(read_text(summary_path, "run summary"), summary_path, "summary")
        if isinstance(summary, dict):
            check_format_version(summary_path, summary.get("format_version"))
        summary = record.read(summary_path, summary).model_dump(mode="json", exclude_unset=True)
        if manifest.OUTPUTS_KEY in summary:
            files = manifest.checked(root, summary_path, summary[manifest.OUTPUTS_KEY])
        else:  # a run written before summaries named their outputs
            plots_dir = inside_run(root, "plots")
            files = [*run_files(root, "*.csv"), *run_files(root, "*.parquet")]
            files += run_files(plots_dir, "*.png") if plots_dir.is_dir() else []
        plots = [p for p in files if p.parent == root / "plots" and p.suffix == ".png"]
        at_top = [p for p in files if p.parent == root]
        report = root / "report.html"
        return cls(
            run_dir=root,
            method=config["method"],
            settings=config.get("settings", {}),
            summary=summary,
            tables=LazyTables({p.stem: p for p in at_top if p.suffix == ".csv"}),
            sample_tables=LazyTables({p.stem: p for p in at_top if p.suffix == ".parquet"}),
            plots=plots,
            cache_stats=dict(summary.get("requests") or {}),
            notes=[str(n) for n in summary.get("notes") or []],
            report=report if report.is_file() else None,
        )


def run_files(folder: Path, pattern: str) -> list[Path]:
    """A run folder's files matching ``pattern``: regular files only. A symbolic link is
    refused in one line: a report would otherwise embed whatever it points to."""
    found = []
    for path in sorted(Path(folder).glob(pattern)):
        if path.is_symlink() or not path.is_file():
            raise BiaslensError(
                f"{path} is {'a symbolic link' if path.is_symlink() else 'not a regular file'}; "
                "biaslens reads only a run folder's own regular files (remove it)"
            )
        found.append(path)
    return found
