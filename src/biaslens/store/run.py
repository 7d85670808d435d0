"""The run directory: one folder per run, written only through this module.

Layout::

    RUN_DIR/
      config.yaml        resolved configuration (method, settings, runtime options)
      samples.parquet    per-sample results
      <table>.csv        small result tables (e.g. fits.csv)
      summary.json       metrics, package versions, model identity + weights hash,
                         dataset hash, git revision
      plots/*.png
      requests.sqlite    request cache; a rerun resumes from it

Every file is written atomically. A directory that holds a run with a different configuration
(or files that are not a biaslens run) is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from biaslens.errors import BiaslensError, ConfigMismatchError
from biaslens.store import atomic
from biaslens.store.cache import RequestCache

FORMAT_VERSION = 1
CONFIG_FILE = "config.yaml"
PACKAGES = ("biaslens", "torch", "transformers", "tokenizers", "numpy", "pandas", "scipy")


def dataset_hash(table: pd.DataFrame) -> str:
    """sha256 of a dataset table's canonical JSON (row order and values)."""
    return hashlib.sha256(table.to_json(orient="records").encode()).hexdigest()


def json_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The table's rows as JSON-safe dicts: NaN becomes null (JSON has no NaN)."""
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in table.to_dict(orient="records")
    ]


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_revision() -> str | None:
    """The git revision of the biaslens source tree, when it is a checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def read_config(root: Path) -> dict[str, Any]:
    path = root / CONFIG_FILE
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise BiaslensError(f"{path}: cannot read the run configuration ({error})") from None
    if not isinstance(loaded, dict) or "method" not in loaded or "settings" not in loaded:
        raise BiaslensError(f"{path}: not a biaslens run configuration (needs method and settings)")
    check_format_version(path, loaded.get("format_version"))
    return loaded


def check_format_version(path: Path, version: Any) -> None:
    """A run file written by a newer biaslens (or without a version) is a clear error."""
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise BiaslensError(
            f"{path}: run format {version!r} is newer than this biaslens understands "
            f"({FORMAT_VERSION}); upgrade biaslens"
        )


class RunStore:
    """Opens (or creates) a run directory for a method and its result-defining settings.

    ``settings`` decide the results (model, mode, prompts, ...) and must match an existing run;
    ``runtime`` (device, batch size) may differ between a run and its resumption.
    """

    def __init__(
        self, root: Path | str, method: str, settings: dict[str, Any], runtime: dict[str, Any]
    ) -> None:
        self.root = Path(root)
        self.method = method
        self.settings = settings
        self.runtime = runtime
        self.ensure_compatible(self.root, method, settings)
        self.root.mkdir(parents=True, exist_ok=True)
        atomic.write_yaml(
            self.root / CONFIG_FILE,
            {
                "format_version": FORMAT_VERSION,
                "method": method,
                "settings": settings,
                "runtime": runtime,
            },
        )
        self._cache: RequestCache | None = None

    @staticmethod
    def ensure_compatible(root: Path, method: str, settings: dict[str, Any]) -> None:
        """Raise unless ``root`` is absent, empty, or a run of ``method`` with ``settings``."""
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise BiaslensError(f"output {root} exists and is not a directory")
        if not root.exists() or not any(root.iterdir()):
            return
        if not (root / CONFIG_FILE).exists():
            raise BiaslensError(
                f"output directory {root} is not empty and holds no biaslens run; "
                "choose another --output"
            )
        existing = read_config(root)
        if existing["method"] != method:
            raise ConfigMismatchError(
                f"output directory {root} holds a {existing['method']} run, not {method}; "
                "choose another --output"
            )
        old = existing["settings"]
        differing = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
        if differing:
            detail = "; ".join(f"{k}: {old.get(k)!r} -> {settings.get(k)!r}" for k in differing)
            raise ConfigMismatchError(
                f"output directory {root} holds a run with a different config ({detail}); "
                "choose another --output"
            )

    # -------------------------------------------------------------- paths
    @property
    def cache(self) -> RequestCache:
        if self._cache is None:
            self._cache = RequestCache(self.root / "requests.sqlite")
        return self._cache

    def path(self, name: str) -> Path:
        return self.root / name

    # -------------------------------------------------------------- writers
    def write_samples(self, table: pd.DataFrame, name: str = "samples") -> Path:
        path = self.root / f"{name}.parquet"
        atomic.write_parquet(path, table)
        return path

    def write_table(self, name: str, table: pd.DataFrame) -> Path:
        path = self.root / f"{name}.csv"
        atomic.write_bytes(path, table.to_csv(index=False).encode())
        return path

    def write_plot(self, name: str, figure) -> Path:
        path = self.root / "plots" / f"{name}.png"
        atomic.write_figure(path, figure)
        return path

    def write_summary(self, metrics: dict[str, Any], **provenance: Any) -> dict[str, Any]:
        """Write ``summary.json`` and return what was written (as JSON types)."""
        summary = {
            "format_version": FORMAT_VERSION,
            "method": self.method,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "settings": self.settings,
            "metrics": metrics,
            **provenance,
            "versions": package_versions(),
            "git_revision": git_revision(),
        }
        atomic.write_json(self.root / "summary.json", summary)
        return json.loads((self.root / "summary.json").read_text())

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
