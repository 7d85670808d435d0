"""SIB Method 2's inputs: the Winogender sentences of the chosen sets, each with ``In {DATE}, ``
prepended at the earliest and latest dates (paper Section 5), and the date sweep of Fig. 4."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from biaslens.data import sources
from biaslens.errors import BiaslensError
from biaslens.methods.sib.data import mgc, winogender
from biaslens.methods.sib.data.mgc import inject_date
from biaslens.methods.sib.detect.settings import DetectSettings
from biaslens.models.base import ModelKind


def date_groups(settings: DetectSettings) -> dict[str, tuple[int, ...]]:
    """The dates averaged for the 'earliest' and 'latest' ends (1901 and 2016 by default)."""
    if settings.average_n == 1:
        return {"earliest": (settings.earliest,), "latest": (settings.latest,)}
    grid = mgc.year_grid(settings.earliest, settings.latest, settings.grid_size)
    return {
        "earliest": tuple(int(d) for d in grid[: settings.average_n]),
        "latest": tuple(int(d) for d in grid[-settings.average_n :]),
    }


def build_sentences(settings: DetectSettings, data_dir: Path | None) -> pd.DataFrame:
    folder = sources.locate("winogender", data_dir)
    stats = winogender.load_occupation_stats(folder)
    parts = []
    builders = {
        "extended": lambda: winogender.build_extended(folder),
        "simplified": winogender.build_simplified,
        "simplified-reference": lambda: winogender.build_simplified_reference(
            sources.locate("sib-simplified", data_dir)
        ),
    }
    for name in dict.fromkeys(settings.sets):
        table = builders[name]()
        table.insert(0, "set", name)
        parts.append(table)
    sentences = pd.concat(parts, ignore_index=True).merge(stats, on="occupation", how="left")
    missing = sorted(sentences.loc[sentences["bls_pct_female"].isna(), "occupation"].unique())
    if missing:
        raise BiaslensError(
            f"{folder / winogender.STATS_FILE}: no statistics for occupation(s) {missing}"
        )
    if settings.limit is not None:
        keep = sorted(sentences["occupation"].unique())[: settings.limit]
        sentences = sentences[sentences["occupation"].isin(keep)].reset_index(drop=True)
    return sentences


def _inputs(sentences: pd.Series, date: int, settings: DetectSettings, kind: ModelKind) -> list:
    injected = [inject_date(s, date, settings.date_format) for s in sentences]
    return injected if kind == ModelKind.MASKED else [mgc.wrap_in_prompt(s, "A") for s in injected]


def expand_dates(
    sentences: pd.DataFrame, settings: DetectSettings, kind: ModelKind
) -> pd.DataFrame:
    rows = []
    for end, dates in date_groups(settings).items():
        for date in dates:
            part = sentences[["set", "id"]].copy()
            part["end"], part["date"] = end, date
            part["input"] = _inputs(sentences["sentence"], date, settings, kind)
            rows.append(part)
    return pd.concat(rows, ignore_index=True)


def sweep_rows(sentences: pd.DataFrame, settings: DetectSettings, kind: ModelKind) -> pd.DataFrame:
    """The ``sweep`` sentences at every date of the grid (Fig. 4)."""
    chosen = sentences[sentences["id"].isin(settings.sweep)]
    unknown = sorted(set(settings.sweep) - set(chosen["id"]))
    if unknown:
        raise BiaslensError(f"--sweep: no sentence with id(s) {unknown} in the chosen sets")
    rows = []
    for date in mgc.year_grid(settings.earliest, settings.latest, settings.grid_size):
        part = chosen[["set", "id"]].copy()
        part["end"], part["date"] = "sweep", int(date)
        part["input"] = _inputs(chosen["sentence"], int(date), settings, kind)
        rows.append(part)
    return pd.concat(rows, ignore_index=True)
