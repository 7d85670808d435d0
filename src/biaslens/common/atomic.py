"""Atomic file writes: write to a temporary file in the same folder, then rename over the target.

A reader (or a crash) never sees a half-written file, and an existing result is replaced only
by a complete new one. Files get the permissions of a plain ``open()`` (0666 minus the umask),
not the 0600 of the temporary file. A temporary file left by a killed process
(``.NAME.*.tmp``) is removed by :func:`remove_stale_temporaries` when the run is opened again.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from biaslens.common.files import make_dir
from biaslens.errors import BiaslensError

TEMP_SUFFIX = ".tmp"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, write: Callable[[io.BufferedWriter], None]) -> None:
    with atomic_file(path) as handle:
        write(handle)


@contextmanager
def atomic_file(path: Path) -> Iterator[io.BufferedWriter]:
    """A file written under a temporary name and moved to ``path`` when the block ends
    without an error (an error or interruption leaves ``path`` as it was)."""
    path = Path(path)
    if path.is_dir():
        raise BiaslensError(f"{path} is a folder, not a file; give a file name")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a symbolic link" if path.is_symlink() else "not a regular file (a device or FIFO)"
        raise BiaslensError(
            f"{path} is {kind}: biaslens replaces only regular files; give another file name"
        )
    make_dir(path.parent, "output folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    except OSError as error:
        raise BiaslensError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as error:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if write_failure(error):
            raise BiaslensError(
                f"cannot write {path}: {error.strerror}; nothing was replaced "
                f"({write_remedy(error.errno)}, then run the same command again)"
            ) from None
        raise


WRITE_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EFBIG,
    errno.EROFS,
    errno.EIO,
    errno.EACCES,
    errno.EPERM,
}
"""A full disk or quota, a file size limit, a read-only, forbidden or failing file system."""


def write_remedy(code: int | None) -> str:
    """What to do about a write the file system refused with ``errno`` ``code``."""
    if code in (errno.EROFS, errno.EACCES, errno.EPERM):
        return "the folder is read-only or not writable by you: make it writable or use another"
    if code == errno.EFBIG:
        return "the file system's file size limit was reached: use another folder"
    if code == errno.EIO:
        return "the disk failed to write: check or repair the file system"
    return "free disk space"


def write_failure(error: BaseException) -> bool:
    """Whether ``error`` is the file system refusing a write (not a bug, not damage)."""
    return isinstance(error, OSError) and error.errno in WRITE_ERRNOS


class ParquetAppender:
    """Tables appended one by one to one Parquet file, a row group each (columns and types
    fixed by the first; see :func:`append_parquet`)."""

    def __init__(self, handle) -> None:
        self._handle = handle
        self._writer = None
        self.rows = 0

    def write(self, table) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrow = pa.Table.from_pandas(table, preserve_index=False)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._handle, arrow.schema)
        elif arrow.schema.names != self._writer.schema.names:
            raise ValueError(
                f"appended columns {arrow.schema.names} differ from {self._writer.schema.names}"
            )
        else:
            arrow = arrow.cast(self._writer.schema)
        self._writer.write_table(arrow)
        self.rows += len(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


@contextmanager
def append_parquet(path: Path) -> Iterator[ParquetAppender]:
    """Write a Parquet file chunk by chunk (``appender.write(frame)``), in bounded memory; the
    file appears at ``path`` only when the block ends without an error."""
    with atomic_file(path) as handle:
        appender = ParquetAppender(handle)
        try:
            yield appender
        finally:  # the writer lets go of the file before it is kept or removed
            appender.close()


def remove_stale_temporaries(root: Path) -> int:
    """Delete temporary files an interrupted write left under ``root``; returns how many."""
    removed = 0
    for folder, _, names in os.walk(root, followlinks=False):  # never into linked folders
        for name in names:
            path = Path(folder) / name
            if name.startswith(".") and name.endswith(TEMP_SUFFIX) and not path.is_symlink():
                path.unlink(missing_ok=True)
                removed += 1
    return removed


def write_bytes(path: Path, data: bytes) -> None:
    write_atomic(path, lambda handle: handle.write(data))


def json_safe(value: Any) -> Any:
    """``value`` with NaN and ±inf floats replaced by None (strict JSON has neither) and numpy
    arrays and scalars as lists and numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if getattr(value, "ndim", 0) and hasattr(value, "tolist"):  # numpy arrays (list columns)
        return json_safe(value.tolist())
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return json_safe(value.item())
        except (TypeError, ValueError):
            return value
    return value


def write_json(path: Path, value: Any) -> None:
    """Strict JSON (no NaN/Infinity tokens, which other tools refuse); NaN/inf become null."""
    text = json.dumps(json_safe(value), indent=2, sort_keys=False, default=str, allow_nan=False)
    write_bytes(path, (text + "\n").encode())


class _NoAliasDumper(yaml.SafeDumper):
    """Writes a value shared in two places twice, never as an anchor and alias: biaslens's
    readers refuse aliases (an alias bomb expands to gigabytes)."""

    def ignore_aliases(self, data) -> bool:
        return True


def write_yaml(path: Path, value: Any) -> None:
    write_bytes(path, yaml.dump(value, Dumper=_NoAliasDumper, sort_keys=False).encode())


def write_parquet(path: Path, table) -> None:
    write_atomic(path, lambda handle: table.to_parquet(handle, index=False))


def write_csv(path: Path, table) -> None:
    write_bytes(path, table.to_csv(index=False).encode())


def write_figure(path: Path, figure) -> None:
    fmt = path.suffix.lstrip(".") or "png"
    write_atomic(
        path, lambda handle: figure.savefig(handle, format=fmt, dpi=120, bbox_inches="tight")
    )


def json_records(table) -> list[dict[str, Any]]:
    """A table's rows as JSON-safe dicts (NaN and ±inf become null)."""
    return json_safe(table.to_dict(orient="records"))


@contextmanager
def staged_folder(folder: Path) -> Iterator[Path]:
    """An empty folder beside ``folder`` to build its new contents in; when the block ends
    without an error it takes ``folder``'s place (an old ``folder`` is moved aside first and
    deleted only once the new one is in place), else it is removed and ``folder`` stays as it
    was."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        yield staging
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        if folder.exists():
            folder.rename(old)
        try:
            staging.rename(folder)
        except BaseException:
            if old.exists() and not folder.exists():
                old.rename(folder)
            raise
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
