"""Reading user files and making output folders, with one-line errors that name the path.

Every reader of a user-supplied file goes through :func:`read_text`, so that a missing file, a
folder given as a file, unreadable permissions or binary bytes are a :class:`BiaslensError`
naming the file and line, never a ``UnicodeDecodeError`` traceback.
"""

from __future__ import annotations

from pathlib import Path

from biaslens.errors import BiaslensError


def read_bytes(path: Path | str, what: str = "file") -> bytes:
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise BiaslensError(f"{what} {path} not found") from None
    except IsADirectoryError:
        raise BiaslensError(f"{what} {path} is a folder, not a file") from None
    except OSError as error:
        raise BiaslensError(f"cannot read {what} {path}: {error.strerror or error}") from None


def read_text(path: Path | str, what: str = "file") -> str:
    """The file's UTF-8 text (a leading BOM is dropped); binary content is a clear error that
    names the line where it starts."""
    raw = read_bytes(path, what)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise BiaslensError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset "
            f"{error.start}); the {what} must be a text file"
        ) from None


def make_dir(path: Path | str, what: str = "output folder") -> Path:
    """Create ``path`` (and its parents) or explain in one line why it cannot be."""
    path = Path(path)
    if path.is_dir():
        return path
    for parent in [path, *path.parents]:
        if parent.exists() and not parent.is_dir():
            raise BiaslensError(f"{what} {path}: {parent} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BiaslensError(f"cannot create {what} {path}: {error.strerror or error}") from None
    return path
