"""Writing a probe set (:mod:`biaslens.data.exports`) or a run's samples where others load them.

A set becomes a folder laid out as a dataset repo on the Hugging Face hub is: its data under
``data/`` (``data/train.parquet``, ``data/train.jsonl``, or a ``datasets.save_to_disk`` folder
``data/``), a dataset card (``README.md``, with the YAML header the hub reads) and
``biaslens.json`` (rows, columns, sha256, biaslens version), so that every usual way of loading
it works: ``load_dataset(FOLDER)``, ``load_dataset("parquet", data_dir=FOLDER)``,
``data_files=FOLDER/data/train.parquet``. The folder is built beside its destination and
renamed into place only when complete, so an interrupted export never leaves a set that loads
half-written, and an old set (replaced only on request) goes only once the new one is whole.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from biaslens.common import atomic
from biaslens.data import sources
from biaslens.data.exports import ExportableSet
from biaslens.errors import BiaslensError
from biaslens.version import __version__

FORMATS = ("parquet", "jsonl", "hf")
HUB_LICENSES = {"MIT": "mit", "Apache-2.0": "apache-2.0", "Apache-2.0 (biaslens)": "apache-2.0"}


@dataclass(frozen=True)
class ExportedSet:
    folder: Path
    rows: int
    columns: list[str]
    sha256: str


def check_destination(folder: Path, overwrite: bool) -> None:
    """A destination that holds anything is refused unless ``overwrite``."""
    if folder.exists() and not folder.is_dir():
        raise BiaslensError(f"{folder} is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not overwrite:
        raise BiaslensError(f"{folder} exists and is not empty: pass --overwrite to replace it")


def _sha256(path: Path) -> str:
    """A data file's sha256; a ``save_to_disk`` folder's is the project's folder checksum
    (:func:`~biaslens.data.sources.tree_sha256`: one ``name<TAB>sha256`` line per file, in
    name order), so a renamed or moved file changes it."""
    if not path.is_dir():
        return sources.sha256_file(path)
    return sources.tree_sha256(path)[0]


def _write_jsonl(parquet: Path, target: Path) -> None:
    with atomic.atomic_file(target) as handle:
        for batch in pq.ParquetFile(parquet).iter_batches(batch_size=50_000):
            for record in atomic.json_records(batch.to_pandas()):
                handle.write((json.dumps(record, ensure_ascii=False) + "\n").encode())


def _write_hf(parquet: Path, staging: Path) -> Path:
    from datasets import Dataset

    cache = staging / ".cache"
    dataset = Dataset.from_parquet(str(parquet), cache_dir=str(cache))
    dataset.save_to_disk(str(staging / "data"))
    del dataset
    shutil.rmtree(cache, ignore_errors=True)
    return staging / "data"


def card(
    entry: ExportableSet, data_file: str, fmt: str, rows: int, columns: list[str], sha256: str
) -> str:
    """The dataset card: the hub's YAML header, then what the set is and how it was built."""
    license_id = HUB_LICENSES.get(entry.license, "other")
    header = [
        "---",
        f"license: {license_id}",
        f"pretty_name: biaslens {entry.name}",
    ]
    if fmt != "hf":
        header += ["configs:", "- config_name: default", f"  data_files: {data_file}"]
    header.append("---")
    load = {
        "parquet": f'load_dataset("parquet", data_files="{data_file}")',
        "jsonl": f'load_dataset("json", data_files="{data_file}")',
        "hf": f'load_from_disk("{data_file}")',
    }[fmt]
    body = [
        f"# {entry.name}",
        "",
        f"{entry.description}.",
        "",
        f"- **Source:** {entry.source}",
        f"- **License:** {entry.license}",
        f"- **How it was built:** {entry.how}",
        f"- **Exported by:** biaslens {__version__}, the rows a run reads, in its order",
        f"- **Rows:** {rows:,}; **columns:** {', '.join(columns)}",
        f"- **sha256 of `{data_file}`:** {sha256}"
        + (" (of its files' `name<TAB>sha256` lines, in name order)" if fmt == "hf" else ""),
        "",
        f"Load it with `datasets.{load}`.",
        "",
    ]
    return "\n".join(header + [""] + body)


def export_set(
    entry: ExportableSet,
    folder: Path | str,
    fmt: str = "parquet",
    data_dir: Path | None = None,
    overwrite: bool = False,
) -> ExportedSet:
    """Write ``entry`` to ``folder`` in ``fmt`` (module docstring)."""
    if fmt not in FORMATS:
        raise BiaslensError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "hf":
        try:
            import datasets  # noqa: F401
        except ImportError:
            raise BiaslensError(
                "--format hf needs the datasets package: pip install 'biaslens[datasets]' "
                "(or export parquet / jsonl, which datasets.load_dataset reads)"
            ) from None
    folder = Path(folder)
    check_destination(folder, overwrite)
    with atomic.staged_folder(folder) as staging:
        # a save_to_disk folder is data/ itself: its parquet source is written beside it
        parquet = staging / ("train.parquet" if fmt == "hf" else "data/train.parquet")
        parquet.parent.mkdir(exist_ok=True)
        with atomic.append_parquet(parquet) as appender:
            columns: list[str] = []
            for chunk in entry.chunks(data_dir):
                columns = columns or [str(c) for c in chunk.columns]
                appender.write(chunk)
            rows = appender.rows
        if fmt == "jsonl":
            data = staging / "data" / "train.jsonl"
            _write_jsonl(parquet, data)
            parquet.unlink()
        elif fmt == "hf":
            data = _write_hf(parquet, staging)
            parquet.unlink()
        else:
            data = parquet
        sha256 = _sha256(data)
        (staging / "README.md").write_text(
            card(entry, data.relative_to(staging).as_posix(), fmt, rows, columns, sha256),
            encoding="utf-8",
        )
        atomic.write_json(
            staging / "biaslens.json",
            {
                "name": entry.name,
                "format": fmt,
                "rows": rows,
                "columns": columns,
                "data": data.relative_to(staging).as_posix(),
                "sha256": sha256,
                "biaslens_version": __version__,
                "source": entry.source,
                "license": entry.license,
            },
        )
    return ExportedSet(folder, rows, columns, sha256)


def push_to_hub(folder: Path | str, repo_id: str, private: bool = False) -> str:
    """Upload an exported set's folder to the dataset repo ``repo_id`` (created if needed) as
    the logged-in user (``hf auth login`` or ``HF_TOKEN``); returns the commit. Offline, or
    without a login, one line says what would work; the token is never written or shown."""
    from huggingface_hub import HfApi, constants, get_token
    from huggingface_hub.errors import HfHubHTTPError

    if constants.HF_HUB_OFFLINE:
        raise BiaslensError(
            f"--push-to-hub {repo_id}: HF_HUB_OFFLINE is set; the set is in {folder}: push it "
            "when online (unset HF_HUB_OFFLINE)"
        )
    if get_token() is None:
        raise BiaslensError(
            f"--push-to-hub {repo_id}: not logged in to the hub: run `hf auth login` or set "
            f"HF_TOKEN; the set is in {folder}"
        )
    api = HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        commit = api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=str(folder),
            commit_message=f"biaslens {__version__}: {Path(folder).name}",
        )
    except (HfHubHTTPError, OSError, ValueError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise BiaslensError(f"--push-to-hub {repo_id}: {message}") from None
    return commit.oid


def export_samples(run_dir: Path | str, target: Path | str, overwrite: bool = False) -> int:
    """A run's ``samples.parquet`` as JSON lines at ``target``; returns the rows written."""
    source = Path(run_dir) / "samples.parquet"
    if not source.is_file():
        raise BiaslensError(f"{run_dir}: no samples.parquet (is it a biaslens run folder?)")
    target = Path(target)
    if target.exists() and not overwrite:
        raise BiaslensError(f"{target} exists: pass --overwrite to replace it")

    _write_jsonl(source, target)
    return int(pq.ParquetFile(source).metadata.num_rows)
