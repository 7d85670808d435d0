"""SIB Method 1 across several models (paper Fig. 3(b) / 6(b)).

Each model gets its own run directory under the output root (run by
:func:`biaslens.runner.run_comparison`); the root also receives ``comparison.csv`` (per model
and W kind: parameters, female−male slope difference and mean r², averaged over prompts) and
``plots/cross_model_{w_kind}.png``: parameter count vs the slope difference, marker size by
mean r².
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from biaslens.common import atomic
from biaslens.common.files import read_models_file
from biaslens.store.result import RunResult


def comparison_table(results: Sequence[RunResult]) -> pd.DataFrame:
    rows = []
    for result in results:
        slopes = result["slopes"]
        if "flat_fits" not in slopes:  # a run from before flat lines were counted
            slopes = slopes.assign(flat_fits=0)
        # r² is averaged over the prompts whose lines have one; the flat lines are counted
        per_kind = slopes.groupby("w_kind").agg(
            female_minus_male_slope=("female_minus_male_slope", "mean"),
            mean_r2=("mean_r2", "mean"),
            flat_fits=("flat_fits", "sum"),
        )
        for w_kind, values in per_kind.iterrows():
            rows.append(
                {
                    "model": result.summary["model"]["name"],
                    "method": result.method,
                    "num_parameters": result.summary["model"]["num_parameters"],
                    "w_kind": w_kind,
                    "female_minus_male_slope": float(values["female_minus_male_slope"]),
                    "mean_r2": float(values["mean_r2"]),
                    "flat_fits": int(values["flat_fits"]),
                    "run_dir": str(result.run_dir),
                }
            )
    return pd.DataFrame(rows)


@dataclass
class ComparisonResult:
    """The per-model runs, the comparison table and its plots."""

    root: Path
    runs: list[RunResult]
    table: pd.DataFrame
    plots: list[Path]
    report: Path | None = None


def compare(results: Sequence[RunResult], root: Path | str) -> ComparisonResult:
    """Write ``comparison.csv`` and the cross-model plots under ``root``."""
    import matplotlib.pyplot as plt

    from biaslens.methods.sib.plots import cross_model_figure

    root = Path(root)
    table = comparison_table(results)
    atomic.write_csv(root / "comparison.csv", table)
    plots = []
    for w_kind, part in table.groupby("w_kind", sort=False):
        figure = cross_model_figure(part, f"MGC Method 1 across models, W = {w_kind}")
        path = root / "plots" / f"cross_model_{w_kind}.png"
        atomic.write_figure(path, figure)
        plt.close(figure)
        plots.append(path)
    return ComparisonResult(root, list(results), table, plots)


__all__ = ["ComparisonResult", "compare", "comparison_table", "read_models_file"]
