"""Many runs as one tidy table, and a comparison of models built from it.

:func:`load_runs` reads the ``estimates`` of finished run folders (given as folders or glob
patterns) into one pandas DataFrame, one row per run × headline value, like inspect's
``evals_df``: run, method, model, settings, the value's labels, value, interval, level, n.
Folders that are incomplete, foreign or of an older biaslens without estimates are listed in
``frame.attrs["skipped"]`` with the reason (and a warning), never fatal.
"""

from __future__ import annotations

import glob
import json
import warnings
from pathlib import Path

import pandas as pd

from biaslens.common.numbers import readable, readable_interval
from biaslens.errors import BiaslensError
from biaslens.framework.registry import find_method
from biaslens.store.result import RunResult

ESTIMATE_FIELDS = (
    "table",
    "metric",
    "symbol",
    "value",
    "ci_low",
    "ci_high",
    "ci_level",
    "n",
    "n_unit",
    "unit",
    "better",
    "no_interval",
    "caution",
    "crossfit",
    "mostly_noise",
)
"""The fields of each ``summary.json`` estimate kept as columns (labels are joined into one)."""
COLUMNS = ["run", "method", "model", "labels", *ESTIMATE_FIELDS, "settings"]


def run_folders(patterns) -> list[Path]:
    """Folders named or matched by ``patterns`` (a folder holding run folders counts as its
    runs: each folder below it that has a ``config.yaml``)."""
    found: list[Path] = []
    for pattern in [patterns] if isinstance(patterns, (str, Path)) else patterns:
        matches = sorted(glob.glob(str(pattern))) or [str(pattern)]
        for match in map(Path, matches):
            if match.is_dir() and not (match / "config.yaml").exists():
                below = sorted(p.parent for p in match.rglob("config.yaml"))
                found += below or [match]
            else:
                found.append(match)
    return list(dict.fromkeys(found))


def _why_no_values(method) -> str:
    """Why a finished run has no headline values: its method reports none with an interval
    (read its report), or they come later (a CID audit's, once ratings are added)."""
    spec = find_method(str(method))
    if spec is not None and not any(h.measures for h in spec.headlines):
        return f"the {method} run reports no headline value with an interval: read its report"
    return (
        f"the {method} run has no headline values yet (a CID audit's fraction biased comes "
        "once people's ratings are added with `biaslens cid-ratings`)"
    )


def load_runs(patterns) -> pd.DataFrame:
    """The headline values of every finished run in ``patterns`` (see the module)."""
    rows, skipped = [], []
    for folder in run_folders(patterns):
        try:
            summary = RunResult.load(folder).summary
        except BiaslensError as error:
            skipped.append((str(folder), str(error)))
            continue
        if "estimates" not in summary:
            skipped.append((str(folder), "written by a biaslens without estimates; rerun it"))
            continue
        if not summary["estimates"]:
            skipped.append((str(folder), _why_no_values(summary.get("method"))))
            continue
        model = summary.get("model") or {}
        model = (model if isinstance(model, str) else model.get("name")) or "—"
        settings = json.dumps(summary.get("settings", {}), sort_keys=True)
        for estimate in summary["estimates"]:
            labels = ", ".join(f"{k}={v}" for k, v in estimate.get("labels", {}).items())
            rows.append(
                {
                    "run": str(folder),
                    "method": summary["method"],
                    "model": model,
                    **{k: estimate.get(k) for k in ESTIMATE_FIELDS},
                    "labels": labels,
                    "settings": settings,
                }
            )
    for folder, reason in skipped:
        warnings.warn(f"skipped {folder}: {reason}", stacklevel=2)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame.attrs["skipped"] = skipped
    return frame


MAX_WIDE_COLUMNS = 8
"""Beyond this many models (columns), :func:`comparison_table` is long: a row per value."""
MAX_PLOTTED = 120
"""The most values :func:`comparison_figure` draws (a figure of more is unreadable)."""


def comparison_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Model × headline value: one row per (method, metric, labels), one column per run's model
    with ``value [low, high]`` (n); beyond :data:`MAX_WIDE_COLUMNS` models, long (a row per
    model and value: method, metric, labels, model, value)."""

    def cell(row) -> str:
        text = readable(row["value"]) if pd.notna(row["value"]) else "—"
        if isinstance(row.get("caution"), str) and row["caution"]:
            text += " (sparse)" if row["caution"].startswith("sparse") else " (read with care)"
        if row.get("mostly_noise") is True:
            text += " (mostly noise)"
        if pd.notna(row["ci_low"]) and pd.notna(row["ci_high"]):
            text += " " + readable_interval(row["ci_low"], row["ci_high"])
        elif row["value"] is not None and pd.notna(row["value"]):
            text += " [no interval]"
        if pd.notna(row["n"]):
            text += f" (n={int(row['n'])})"
        return text

    shown = frame.assign(cell=frame.apply(cell, axis=1), column=_column_names(frame))
    if shown["column"].nunique() > MAX_WIDE_COLUMNS:
        long = shown[["method", "symbol", "labels", "column", "cell"]]
        return long.rename(columns={"column": "model", "cell": "value"}).reset_index(drop=True)
    wide = shown.pivot_table(
        index=["method", "symbol", "labels"],
        columns="column",
        values="cell",
        aggfunc="first",
        sort=False,
    )
    return wide.reset_index().rename_axis(columns=None)


def _column_names(frame: pd.DataFrame) -> pd.Series:
    """The model's name; where one method has two runs of a model, with as much of each run's
    path as tells them apart (two folders both called ``run`` get their parents too; runs of
    one model under different methods share its column: their rows differ)."""
    runs = frame.groupby(["method", "model"])["run"].nunique()
    shared = {model for (_, model), count in runs.items() if count > 1}
    tails = {}
    for model in shared:
        paths = sorted(set(frame.loc[frame["model"] == model, "run"]))
        tails.update(_distinct_tails(paths))
    return frame.apply(
        lambda r: f"{r['model']} ({tails[r['run']]})" if r["model"] in shared else r["model"],
        axis=1,
    )


def _distinct_tails(paths: list[str]) -> dict[str, str]:
    """Each path's shortest tail of folder names that no other of ``paths`` shares."""
    parts = {path: Path(path).parts for path in paths}
    longest = max(len(p) for p in parts.values())
    for depth in range(1, longest + 1):
        tails = {path: "/".join(p[-depth:]) for path, p in parts.items()}
        if len(set(tails.values())) == len(tails):
            return tails
    return {path: path for path in paths}


def comparison_figure(frame: pd.DataFrame):
    """One panel per metric: each run's value and interval (a forest plot); None beyond
    :data:`MAX_PLOTTED` values (the table holds them)."""
    import matplotlib.pyplot as plt

    if len(frame) > MAX_PLOTTED:
        return None
    metrics = list(dict.fromkeys(zip(frame["method"], frame["symbol"], strict=True)))
    figure, axes = plt.subplots(
        len(metrics), 1, figsize=(8, 1.2 + 0.35 * len(frame) + 0.6 * len(metrics)), squeeze=False
    )
    names = _column_names(frame)
    for axis, (method, symbol) in zip(axes[:, 0], metrics, strict=True):
        part = frame[(frame["method"] == method) & (frame["symbol"] == symbol)]
        y = range(len(part))
        values = part["value"].astype(float)
        low = (values - part["ci_low"].astype(float)).fillna(0).clip(lower=0)
        high = (part["ci_high"].astype(float) - values).fillna(0).clip(lower=0)
        axis.errorbar(values, list(y), xerr=[low, high], fmt="o", capsize=3)
        axis.set_yticks(list(y))
        axis.set_yticklabels(
            [f"{names[i]} {part.loc[i, 'labels']}".strip() for i in part.index], fontsize=7
        )
        axis.set_title(f"{method}: {symbol}", fontsize=9)
    figure.tight_layout()
    return figure
