"""Two audited models' detector rates, paired over the sentences both judged: each sentence's
two verdicts are compared, in Winogender's occupations
(:func:`~biaslens.metrics.intervals.shares.paired_rate_differences`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.metrics.intervals import LEVEL
from biaslens.metrics.intervals.shares import paired_rate_differences
from biaslens.store.result import RunResult

RATES = ("tpr", "tnr", "balanced_accuracy")


def sentence_verdicts(sentences: pd.DataFrame, name: str, threshold: float) -> pd.DataFrame:
    """A run's sentences of set ``name``: whether each is judged and flagged unspecified."""
    part = sentences[sentences["set"] == name]
    metric = part["rated_metric"] if "rated_metric" in part else part["metric"]
    return pd.DataFrame(
        {
            "id": part["id"].to_numpy(),
            "occupation": part["occupation"].to_numpy(),
            "positive": ~part["well_specified"].to_numpy(dtype=bool),
            "judged": np.isfinite(metric.to_numpy(dtype=float)),
            "flagged": metric.to_numpy(dtype=float) > threshold,
        }
    )


def _verdicts(run: RunResult, name: str) -> pd.DataFrame:
    sentences = pd.read_parquet(run.run_dir / "sentences.parquet")
    return sentence_verdicts(sentences, name, float(run.record.settings.get("threshold", 0.5)))


def paired_detector(
    folder_a: Path, folder_b: Path, labels: dict, metric: str, level: float = LEVEL
) -> dict | None:
    """Model A − model B for one detector rate on one set, over the sentences both judged
    (None: a number without a paired interval)."""
    if metric not in RATES or "set" not in labels:
        return None
    runs = [RunResult.load(folder) for folder in (folder_a, folder_b)]
    a, b = (_verdicts(run, labels["set"]) for run in runs)
    both = a.merge(b, on="id", suffixes=("_a", "_b"))
    both = both[both["judged_a"] & both["judged_b"]]
    found = paired_rate_differences(
        both["flagged_a"], both["flagged_b"], both["positive_a"], both["occupation_a"], level
    )
    difference, interval = found[metric]
    return {
        "difference": difference,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "note": interval.why_not,
        "n": int(len(both)),
        "units": f"sentences both judged, in {both['occupation_a'].nunique()} occupations",
    }
