"""Read a finished run directory for reporting: its config, summary, tables, plots and samples.

A folder that is not a run, a run that never finished (no ``summary.json``) or one written by a
newer biaslens is a :class:`BiaslensError` with one clear line, never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.store.run import CONFIG_FILE, check_format_version, read_config

SUMMARY_FILE = "summary.json"

HEADLINES: dict[str, tuple[tuple[str, str], ...]] = {
    "sib-mgc": (
        ("slopes", "Female − male slope and mean r² (Method 1)"),
        ("fits", "Per-gender linear fits"),
    ),
    "sib-detect": (("rates", "Detector TPR / TNR / balanced accuracy (Table 3)"),),
    "sib-toy": (("toy_summary", "Toy SCM: correlations before and after selection"),),
    "cid-audit": (("continuations", "Most common continuations per λ"),),
    "cid-sensitivity": (
        ("lambda_star_summary", "λ* per perturbation type (sorted by median)"),
        ("lambda_star", "λ* per pair"),
    ),
    "lei-eval": (("lei_mu", "μ per set vs desired μ"), ("subjects", "Subjects: max |γ|")),
    "lei-train": (
        ("results", "Test μ, mean ± std over the selected checkpoints (train size 0 = zero-shot)"),
        ("selected", "Selected checkpoints (dev, LEI criterion)"),
        ("grid", "Grid: dev μ per checkpoint"),
        ("qa_results", "QA utility (EM / F1) before and after"),
    ),
}
"""Per method: the CSV tables (name, title) that summarise a run, most important first."""

TOP_CONTINUATIONS = 3


@dataclass
class RunView:
    """What a report shows of one run directory."""

    root: Path
    method: str
    summary: dict
    settings: dict
    tables: dict[str, tuple[str, pd.DataFrame]] = field(default_factory=dict)
    plots: list[Path] = field(default_factory=list)
    samples: pd.DataFrame | None = None

    @property
    def model_name(self) -> str:
        model = self.summary.get("model")
        return model.get("name", "?") if isinstance(model, dict) else str(model or "?")

    @property
    def label(self) -> str:
        return f"{self.root.name} ({self.model_name})"


def load_run(root: Path | str) -> RunView:
    """The run in ``root``, checked: a run of a known format that finished."""
    root = Path(root)
    if not root.is_dir():
        raise BiaslensError(f"{root}: no such run directory")
    if not (root / CONFIG_FILE).is_file():
        raise BiaslensError(f"{root}: not a biaslens run directory (no {CONFIG_FILE})")
    config = read_config(root)  # raises for a newer format
    summary_path = root / SUMMARY_FILE
    if not summary_path.is_file():
        raise BiaslensError(
            f"{root}: the {config['method']} run is incomplete (no {SUMMARY_FILE}); run the "
            "same command again to resume and finish it"
        )
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise BiaslensError(f"{summary_path}: unreadable summary ({error})") from None
    check_format_version(summary_path, summary.get("format_version"))
    view = RunView(root, config["method"], summary, config.get("settings", {}))
    for name, title in HEADLINES.get(view.method, ()):
        path = root / f"{name}.csv"
        if path.is_file():
            view.tables[name] = (title, _read_table(path, view.method))
    if not view.tables:  # unknown method: every CSV table
        for path in sorted(root.glob("*.csv")):
            view.tables[path.stem] = (path.stem, _read_table(path, view.method))
    view.plots = sorted((root / "plots").glob("*.png")) if (root / "plots").is_dir() else []
    if (root / "samples.parquet").is_file():
        try:
            view.samples = pd.read_parquet(root / "samples.parquet")
        except Exception as error:  # pyarrow raises several types for damaged files
            raise BiaslensError(f"{root / 'samples.parquet'}: unreadable ({error})") from None
    return view


def _read_table(path: Path, method: str) -> pd.DataFrame:
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as error:
        raise BiaslensError(f"{path}: unreadable table ({error})") from None
    if method == "cid-audit" and path.stem == "continuations":
        # written by metrics.cid.top_continuations: most common first within group and λ
        keys = [c for c in ("group", "lam") if c in table]
        table = table.groupby(keys, sort=False).head(TOP_CONTINUATIONS) if keys else table
    return table.reset_index(drop=True)
