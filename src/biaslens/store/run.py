"""The run directory: one folder per run, written only through this module.

Layout::

    RUN_DIR/
      config.yaml        resolved configuration (method, settings, runtime options)
      samples.parquet    per-sample results (other per-sample tables: NAME.parquet)
      <table>.csv        small result tables (e.g. fits.csv)
      summary.json       metrics, model identity and backend settings, dataset hash,
                         request counts, package versions, git revision, and the outputs
                         (tables, samples, plots) with their sizes and sha256
      plots/*.png
      report.html        the run's HTML report
      requests.sqlite    request cache, only with ``--no-cache`` (else the shared one,
                         :mod:`biaslens.store.cache`); a rerun resumes from it
      .lock              held while a process writes the run

Nothing is written until the run has something to keep: a run that fails on its inputs leaves
no folder behind. Every file is written atomically, with the permissions of the umask. A
directory that holds a run with a different configuration (or files that are not a biaslens
run) is refused before anything is written — unless it holds nothing but that run's
``config.yaml`` (a run stopped before its first output, such as one refused after scoring,
whose answers are in the shared request cache) —, and a second process on the same folder is
refused with the first one's pid while the first holds the lock. A run's outputs change
together: from a process's first new output until its ``summary.json`` the run reads as
incomplete (:mod:`biaslens.store.manifest`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from biaslens.common import atomic
from biaslens.common.files import make_dir, read_text
from biaslens.common.structured import load_yaml
from biaslens.errors import BiaslensError, ConfigMismatchError
from biaslens.store import manifest
from biaslens.store import summary as record
from biaslens.store.cache import RequestCache
from biaslens.store.lock import LOCK_FILE, RunLock
from biaslens.store.paths import ANOTHER_OUTPUT, inside_run
from biaslens.store.provenance import build_info, package_versions

FORMAT_VERSION = 1
CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
CACHE_FILE = "requests.sqlite"
REPORT_FILE = "report.html"


def dataset_hash(table) -> str:
    """sha256 of a dataset table's canonical JSON (row order and values)."""
    return hashlib.sha256(table.to_json(orient="records").encode()).hexdigest()


class RowsHash:
    """sha256 of a table's rows as JSON lines, fed chunk by chunk: the same digest for any
    chunking of the same rows (for sets too large to hold as one table)."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def update(self, table) -> None:
        text = table.to_json(orient="records", lines=True)
        if text and not text.endswith("\n"):
            text += "\n"
        self._digest.update(text.encode())

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


def same_model(root: Path, recorded: Any, model: dict[str, Any] | None) -> None:
    """Refuse to resume a run of a hub model whose name now resolves to another commit than the
    one the run began with (both shown): the user pins the run's commit with ``--revision``;
    and a run of the same model read with other settings that change its numbers (dtype, device
    class, ``--chat``…): its results would be overwritten with another model's. (A local folder
    whose files changed is recomputed in place: its fingerprint keys the cache.)"""
    if not isinstance(recorded, dict) or not model:
        return
    name = model.get("repo_id") or model.get("name")
    old, new = recorded.get("commit_sha"), model.get("commit_sha")
    if old and new and old != new:
        asked = f"{name} (revision {model.get('revision') or 'main'})"
        raise ConfigMismatchError(
            f"output directory {root} holds a run of {name} at commit {old}, but {asked} now "
            f"resolves to {new}: pass --revision {old} to resume that run, or {ANOTHER_OUTPUT}",
            reason=f"{name} at commit {old}",
        )
    before, after = recorded.get("numerics"), model.get("numerics")
    if isinstance(before, dict) and isinstance(after, dict) and before != after:
        detail = "; ".join(
            f"{k}: {before.get(k)!r} -> {after.get(k)!r}"
            for k in sorted(set(before) | set(after))
            if before.get(k) != after.get(k)
        )  # the same model read another way gives other numbers
        raise ConfigMismatchError(
            f"output directory {root} holds a run of {name} read with other settings "
            f"({detail}); {ANOTHER_OUTPUT}",
            reason=detail,
        )


def read_config(root: Path) -> dict[str, Any]:
    """A run's ``config.yaml``, read as untrusted input: no aliases, bounded depth, and the
    fields of the expected types (``method`` text, ``settings`` a mapping)."""
    path = inside_run(root, CONFIG_FILE)
    loaded = load_yaml(read_text(path, "run configuration"), path, "run configuration")
    if not isinstance(loaded, dict) or "method" not in loaded or "settings" not in loaded:
        raise BiaslensError(f"{path}: not a biaslens run configuration (needs method and settings)")
    check_format_version(path, loaded.get("format_version"))
    for field, kind, name in (
        ("method", str, "text"),
        ("settings", dict, "a mapping"),
        ("runtime", (dict, type(None)), "a mapping"),
        ("model", (dict, type(None)), "a mapping"),
    ):
        if not isinstance(loaded.get(field), kind):
            raise BiaslensError(
                f"{path}: {field} must be {name}, got {type(loaded.get(field)).__name__}"
            )
    return loaded


def check_format_version(path: Path, version: Any) -> None:
    """A run file written by a newer biaslens is a clear error, and so is one without a
    version or with one no biaslens writes (a whole number from 1)."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BiaslensError(
            f"{path}: format_version {version!r} is not a biaslens run format (a whole number "
            f"from 1; this biaslens writes {FORMAT_VERSION}): not a biaslens run file"
        )
    if version > FORMAT_VERSION:
        raise BiaslensError(
            f"{path}: run format {version!r} is newer than this biaslens understands "
            f"({FORMAT_VERSION}); upgrade biaslens"
        )


class RunStore:
    """A run directory for a method and its result-defining settings.

    ``settings`` decide the results (model, mode, prompts, ...) and must match an existing run;
    ``runtime`` (device, batch size, backend settings) may differ between a run and its
    resumption. The folder, its ``config.yaml`` and its lock are made on the first write (or
    the first use of the request cache); use the store as a context manager, or ``close()``.
    """

    def __init__(
        self,
        root: Path | str,
        method: str,
        settings: dict[str, Any],
        runtime: dict[str, Any] | None = None,
        model: dict[str, Any] | None = None,
        cache_file: Path | None = None,
    ) -> None:
        self.root = Path(root)
        self.cache_file = cache_file
        """The request cache (a shared one, :func:`~biaslens.store.cache.model_cache_file`); None:
        ``requests.sqlite`` in the run folder."""
        self.method = method
        self.settings = settings
        self.runtime = runtime or {}
        self.model = model
        self.ensure_compatible(self.root, method, settings, model)
        self._opened = False
        self._lock = RunLock(self.root)
        self._cache: RequestCache | None = None
        self._outputs: list[str] = []
        """Outputs written by this process, in order (named by ``summary.json``)."""

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def ensure_compatible(
        root: Path, method: str, settings: dict[str, Any], model: dict[str, Any] | None = None
    ) -> None:
        """Raise unless ``root`` is absent, empty, or a run of ``method`` with ``settings`` (and,
        where both record a hub commit, of the same commit: :func:`same_model`)."""
        root = Path(root)
        for place in [root, *root.parents]:
            if place.exists() and not place.is_dir():
                raise BiaslensError(f"output {root}: {place} is a file, not a folder")
        if not root.exists():
            return
        try:
            entries = [p for p in root.iterdir() if p.name != LOCK_FILE]
        except OSError as error:
            raise BiaslensError(f"cannot read output folder {root}: {error.strerror}") from None
        if not entries:
            return
        if not (root / CONFIG_FILE).exists():
            raise BiaslensError(
                f"output directory {root} is not empty and holds no biaslens run; {ANOTHER_OUTPUT}"
            )
        existing = read_config(root)
        if existing["method"] != method:
            raise ConfigMismatchError(
                f"output directory {root} holds a {existing['method']} run, not {method}; "
                f"{ANOTHER_OUTPUT}",
                reason=f"a {existing['method']} run",
            )
        old = existing["settings"]
        differing = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
        if differing and [p.name for p in entries] == [CONFIG_FILE]:
            return  # a run that stopped before writing anything (e.g. refused): nothing to keep
        if differing:
            detail = "; ".join(f"{k}: {old.get(k)!r} -> {settings.get(k)!r}" for k in differing)
            raise ConfigMismatchError(
                f"output directory {root} holds a run with a different config ({detail}); "
                f"{ANOTHER_OUTPUT}",
                reason=detail,
            )
        same_model(root, existing.get("model"), model)

    def open(self) -> RunStore:
        """Make the folder, take its lock, clear temporary files a killed run left, and write
        ``config.yaml``. Called by the first write; calling it again does nothing."""
        if self._opened:
            return self
        make_dir(self.root, "run folder")
        self._lock.acquire()
        try:
            self.ensure_compatible(self.root, self.method, self.settings, self.model)  # raced?
            atomic.remove_stale_temporaries(self.root)
            atomic.write_yaml(
                self.path(CONFIG_FILE),
                {
                    "format_version": FORMAT_VERSION,
                    "method": self.method,
                    "settings": self.settings,
                    "runtime": self.runtime,
                    **({"model": self.model} if self.model else {}),
                },
            )
        except BaseException:
            self._lock.release()
            raise
        self._opened = True
        return self

    # -------------------------------------------------------------- paths
    @property
    def cache(self) -> RequestCache:
        if self._cache is None:
            self.open()
            self._cache = RequestCache(self.cache_file or self.path(CACHE_FILE))
        return self._cache

    def path(self, name: str) -> Path:
        """A path inside the run folder (symbolic links there are refused)."""
        return inside_run(self.root, name)

    # -------------------------------------------------------------- writers
    def output_path(self, name: str) -> Path:
        """Where to write the output ``name`` (a table, samples, a plot). The first output of a
        process marks the run incomplete (:mod:`biaslens.store.manifest`): an attempt killed
        while it replaces the outputs leaves no finished-looking mix of two runs."""
        self.open()
        if not self._outputs:
            manifest.remove_finished_marks(self.root, (SUMMARY_FILE, REPORT_FILE))
        if name not in self._outputs:
            self._outputs.append(name)
        return self.path(name)

    def write_samples(self, table, name: str = "samples") -> Path:
        path = self.output_path(f"{name}.parquet")
        atomic.write_parquet(path, table)
        return path

    @contextmanager
    def append_samples(self, name: str = "samples") -> Iterator[atomic.ParquetAppender]:
        """Per-sample rows written chunk by chunk (a method that streams a large set); the
        file replaces an earlier one only once complete."""
        path = self.output_path(f"{name}.parquet")
        with atomic.append_parquet(path) as appender:
            yield appender

    def labelled(self, table):
        """``table`` with the run's ``model`` and ``method`` as its first columns (replacing
        any it had, e.g. read back from the run's own CSV), so that a CSV read on its own, or
        stacked with another run's, says whose numbers it holds."""
        model = (self.model or {}).get("name") or self.settings.get("model") or ""
        table = table.drop(columns=[c for c in ("model", "method") if c in table.columns])
        table.insert(0, "method", self.method)
        table.insert(0, "model", str(model))
        return table

    def write_table(self, name: str, table) -> Path:
        """``NAME.csv``: the table, :meth:`labelled` with the run's model and method."""
        path = self.output_path(f"{name}.csv")
        atomic.write_csv(path, self.labelled(table))
        return path

    def write_plot(self, name: str, figure) -> Path:
        path = self.output_path(f"plots/{name}.png")
        atomic.write_figure(path, figure)
        return path

    def write_summary(self, metrics: dict[str, Any], **provenance: Any) -> dict[str, Any]:
        """Write ``summary.json`` (strict JSON: NaN and ±inf become null), naming the outputs
        this process wrote with their sizes and digests, and return it."""
        self.open()
        summary = atomic.json_safe(
            {
                "format_version": FORMAT_VERSION,
                "method": self.method,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "settings": self.settings,
                "metrics": metrics,
                **provenance,
                "versions": package_versions(),
                "biaslens": (build := build_info()),
                "git_revision": build["commit"],
                manifest.OUTPUTS_KEY: manifest.describe(self.root, self._outputs),
            }
        )
        atomic.write_json(self.path(SUMMARY_FILE), record.written(summary))
        return json.loads((self.root / SUMMARY_FILE).read_text(encoding="utf-8"))

    def extend_summary(self, summary: dict[str, Any]) -> None:
        """Write back ``summary`` (a finished run's, read before this process wrote anything)
        naming, beside its outputs, those this process added (a later stage of the run, such as
        imported ratings). Until then the run reads as incomplete, as during any write."""
        self.open()
        extended = dict(summary)
        if manifest.OUTPUTS_KEY in extended:  # a run written before outputs were named lists none
            added = manifest.describe(self.root, self._outputs)
            extended[manifest.OUTPUTS_KEY] = {**extended[manifest.OUTPUTS_KEY], **added}
        atomic.write_json(self.path(SUMMARY_FILE), record.written(extended))

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        self._lock.release()
        self._opened = False
