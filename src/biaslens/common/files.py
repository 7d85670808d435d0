"""Reading user files and making output folders, with one-line errors that name the path.

Every reader of an input file goes through :func:`check_input_file` (directly, or through
:func:`read_text`), so that a missing file, a folder, a device or FIFO (``/dev/zero`` would be
read forever), a file over the size bound, unreadable permissions, binary bytes or an overlong
line are a :class:`BiaslensError` naming the file (and line), never a traceback or a machine
brought down by memory.
"""

from __future__ import annotations

import stat
import unicodedata
from pathlib import Path

from biaslens.common.env import number_from_env
from biaslens.errors import BiaslensError

MAX_INPUT_BYTES_ENV = "BIASLENS_MAX_INPUT_BYTES"
DEFAULT_MAX_INPUT_BYTES = 4 << 30
"""The largest input file read (4 GiB: UnQover's full prediction dumps are ~1 GiB);
``$BIASLENS_MAX_INPUT_BYTES`` changes it."""
MAX_LINE_CHARS = 1_000_000
"""The longest line of a line-oriented text file (word lists, TSV, model lists)."""


def max_input_bytes() -> int:
    return number_from_env(
        MAX_INPUT_BYTES_ENV, DEFAULT_MAX_INPUT_BYTES, int, 1, what="a number of bytes"
    )


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def check_input_file(path: Path | str, what: str = "file") -> Path:
    """``path`` if it is a regular file within the size bound; else a one-line error."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise BiaslensError(f"{what} {path} not found") from None
    except OSError as error:
        raise BiaslensError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if stat.S_ISDIR(info.st_mode):
        raise BiaslensError(f"{what} {path} is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise BiaslensError(f"{what} {path} is not a regular file (a device, FIFO or socket)")
    limit = max_input_bytes()
    if info.st_size > limit:
        raise BiaslensError(
            f"{what} {path} is {_size(info.st_size)}, over the {_size(limit)} input bound "
            f"(set {MAX_INPUT_BYTES_ENV} to read it)"
        )
    return path


def read_bytes(path: Path | str, what: str = "file") -> bytes:
    path = check_input_file(path, what)
    limit = max_input_bytes()
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as error:
        raise BiaslensError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if len(raw) > limit:  # it grew while being read
        raise BiaslensError(f"{what} {path} is over the {_size(limit)} input bound")
    return raw


def read_text(path: Path | str, what: str = "file", max_line: int | None = MAX_LINE_CHARS) -> str:
    """The file's UTF-8 text (a leading BOM is dropped); binary content is a clear error that
    names the line where it starts, and so is a line over ``max_line`` characters (None: no
    bound, for formats such as JSON that may hold a whole file on one line)."""
    raw = read_bytes(path, what)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise BiaslensError(
            f"{path}:{line}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset "
            f"{error.start}); the {what} must be a text file"
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise BiaslensError(
            f"{path}:{line}: a control character ('\\x00'); the {what} must be a text file"
        )
    if max_line is not None and len(text) > max_line:
        for number, line in enumerate(text.split("\n"), start=1):
            if len(line) > max_line:
                raise BiaslensError(
                    f"{path}:{number}: a line of {len(line):,} characters (the {what} allows "
                    f"{max_line:,} per line)"
                )
    return text


def read_table(
    path: Path | str,
    what: str,
    columns: tuple[str, ...] = (),
    unique: tuple[str, ...] = (),
    **options,
):
    """A Parquet or CSV table (by suffix) read like any input: bounded, parsed with a one-line
    error naming the file, with the ``columns`` it must have and no two rows sharing the
    ``unique`` columns. Run files read back (a ratings export, a run's samples) go through it
    too: a damaged run file is an error, never a traceback or a silent wrong join."""
    import pandas as pd

    path = check_input_file(path, what)
    try:
        if path.suffix == ".parquet":
            table = pd.read_parquet(path)
        else:
            table = pd.read_csv(path, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise BiaslensError(f"{path}: cannot read the {what} ({error})") from None
    except Exception as error:  # pyarrow raises many types for damaged Parquet files
        if type(error).__module__.startswith(("pyarrow", "pandas")) or isinstance(
            error, (OSError, ValueError)
        ):
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise BiaslensError(
                f"{path}: cannot read the {what} ({type(error).__name__}: {message[:200]})"
            ) from None
        raise
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise BiaslensError(f"{path}: the {what} lacks the column(s) {missing}")
    if unique and len(table):
        repeated = table.duplicated(list(unique), keep="first")
        if repeated.any():
            row = int(repeated.to_numpy().nonzero()[0][0])
            values = ", ".join(f"{c}={table[c].iloc[row]!r}" for c in unique)
            raise BiaslensError(f"{path}: the {what} holds {values} more than once")
    return table


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


def control_character(text: str) -> str | None:
    """The first control character in ``text`` (Unicode category Cc, tab aside), or None:
    never part of a name, a word or a label."""
    return next((c for c in text if unicodedata.category(c) == "Cc" and c != "\t"), None)


def check_plain_text(value: str, where: str) -> str:
    """``value`` without control characters (a NUL from a YAML escape, a terminal escape); else
    one line naming ``where``."""
    found = control_character(value)
    if found is not None:
        raise BiaslensError(f"{where}: {value!r} holds the control character {found!r}")
    return value


def read_models_file(path: Path) -> list[str]:
    """One model per line; blank lines and ``#`` comments are ignored."""
    lines = read_text(path, "models file").splitlines()
    models = [line.split("#", 1)[0].strip() for line in lines]
    models = [m for m in models if m]
    if not models:
        raise BiaslensError(f"{path}: no models listed")
    return models
