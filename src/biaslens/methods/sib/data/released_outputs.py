"""Stored Method 2 outputs, so that Table 3 can be computed from them without running a model.

Two layouts are read into one long table (one row per model, prompt variant, sentence and date,
with the female, male and neutral shares of the pronoun mass in percent):

* **The SIB reference repository's released outputs** (``biaslens datasets download
  sib-outputs``): files ``{f,m,n}p_wikibio_<model>_date_<occupation>_<participant>_<0|1>_test
  <True|False>[_P<n>].csv`` with the columns ``,date,<sentence>``: per date, the female (``f``),
  male (``m``) or neutral (``n``) share, normalised over the three, in percent. The extended
  Winogender set's participants are the original one, ``someone``, ``man`` and ``woman`` (answer
  1: the pronoun is the participant's); the Simplified set's are ``female``, ``male`` and
  ``unspecified``. ``_P<n>`` names the instruction prompt of a causal model (P3 = prompt A).
* **biaslens's own**: the ``samples.parquet`` of a ``sib-detect`` run (columns ``set``, ``id``,
  ``date``, ``p_female``, ``p_male``, ``p_neutral``, masses that are normalised here).
"""

from __future__ import annotations

import csv
import io
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from biaslens.common.files import read_table, read_text
from biaslens.errors import BiaslensError

REFERENCE_NAME = re.compile(
    r"^(?P<pronoun>[fmn])p_wikibio_(?P<model>.+)_date_(?P<occupation>[a-z]+)_"
    r"(?P<participant>[a-z]+)_(?P<answer>[01])_test(?P<test>True|False)(?:_P(?P<prompt>\d+))?$"
)
PRONOUNS = {"f": "female", "m": "male", "n": "neutral"}
SIMPLIFIED_PARTICIPANTS = {"female", "male", "unspecified"}
EXTENDED_WELL_SPECIFIED = {"man", "woman"}


SHARE_MAX = 100.0 + 1e-6
"""A share is a percentage of the pronoun mass (the reference rounds to 3 decimals)."""
MASS_MAX = 1.0 + 1e-6
"""A pronoun mass is a sum of probabilities of distinct tokens (or their mean over steps)."""


def checked_numbers(
    column: pd.Series, path: Path | str, what: str, low: float, high: float, first_line: int
) -> np.ndarray:
    """``column`` as finite floats in [low, high]; anything else (text, blank, NaN, inf, out of
    range) is an error naming the file, the line (``first_line`` is the first row's) and the
    value: a stored output that is not a number must not become a metric."""
    numbers = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(numbers) | (numbers < low) | (numbers > high)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise BiaslensError(
            f"{path}:{first_line + row}: {what} {column.iloc[row]!r} is not a number in "
            f"[{low:g}, {high:g}] ({int(bad.sum())} such value(s) in {column.name!r})"
        )
    return numbers


def checked_columns(
    table: pd.DataFrame, columns: list, path: Path | str, what: str, low: float, high: float,
    first_line: int,
) -> np.ndarray:  # fmt: skip
    """Each of ``columns`` read as :func:`checked_numbers` reads it, one row of the result per
    column (columns already parsed as numbers are checked at once; anything else, and any bad
    value, goes through :func:`checked_numbers` column by column, which names the first)."""
    block = table[list(columns)]
    if all(pd.api.types.is_numeric_dtype(kind) for kind in block.dtypes):
        numbers = block.to_numpy(dtype=float).T
        if (np.isfinite(numbers) & (numbers >= low) & (numbers <= high)).all():
            return numbers
    rows = [checked_numbers(table[c], path, what, low, high, first_line) for c in columns]
    return np.vstack(rows)


def _well_specified(participant: str, answer: int) -> bool:
    """Ground truth (paper Section 5): the pronoun refers to the participant and the
    participant is the man / the woman; in the Simplified set, a female / male professional."""
    if participant in SIMPLIFIED_PARTICIPANTS:
        return participant != "unspecified"
    return participant in EXTENDED_WELL_SPECIFIED and answer == 1


def released_files(source: Path) -> Iterator[tuple[str, str, str]]:
    """(file stem, text, where) of each released CSV below the folder ``source``, or inside the
    ``.tar.gz`` archive ``source`` (read in place, never unpacked: ``where`` is
    ``archive:member``)."""
    source = Path(source)
    if source.is_file() and source.name.endswith((".tar.gz", ".tgz")):
        yield from _archived_files(source)
        return
    if not source.is_dir():
        raise BiaslensError(f"{source}: no such folder (or .tar.gz archive) of stored outputs")
    for path in sorted(source.rglob("*.csv")):
        yield path.stem, read_text(path, "output file"), str(path)


def _archived_files(archive: Path) -> Iterator[tuple[str, str, str]]:
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                if not (member.isfile() and member.name.endswith(".csv")):
                    continue
                where = f"{archive}:{member.name}"
                handle = tar.extractfile(member)
                try:
                    text = handle.read().decode("utf-8") if handle else ""
                except UnicodeDecodeError as error:
                    raise BiaslensError(f"{where}: not UTF-8 text ({error.reason})") from None
                yield PurePosixPath(member.name).stem, text, where
    except (tarfile.TarError, EOFError, OSError) as error:
        raise BiaslensError(f"{archive}: not a readable .tar.gz archive ({error})") from None


def _csv_rows(text: str, path: str) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of one small released CSV (the csv module: a file of a few
    rows, read 24,000 times, is not worth a parser's start-up)."""
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error as error:
        raise BiaslensError(f"{path}: not a CSV table ({error})") from None
    if not rows:
        raise BiaslensError(f"{path}: not a CSV table (no header)")
    return rows[0], rows[1:]


def read_reference_outputs(source: Path) -> pd.DataFrame:
    """The released CSV files below the folder ``source`` (or in the archive ``source``) as
    one long table (see the module)."""
    records = []
    for stem, text, path in released_files(source):
        match = REFERENCE_NAME.match(stem)
        if match is None:
            continue
        header, body = _csv_rows(text, path)
        if len(header) < 3 or header[1] != "date" or any(len(r) != len(header) for r in body):
            raise BiaslensError(f"{path}: expected the columns ',date,<sentence>'")
        sentence = header[-1]
        column = pd.Series([r[-1] for r in body], name=sentence, dtype=object)
        values = checked_numbers(column, path, "share", 0.0, SHARE_MAX, first_line=2)
        dates = pd.to_numeric(pd.Series([r[1] for r in body], dtype=object), errors="coerce")
        if dates.isna().any():
            raise BiaslensError(f"{path}: the date column holds a value that is not a year")
        participant, answer = match["participant"], int(match["answer"])
        for date, value in zip(dates.astype(int), values, strict=True):
            records.append(
                {
                    "model": match["model"],
                    "prompt": f"P{match['prompt']}" if match["prompt"] else "",
                    "test": match["test"] == "True",
                    "set": "simplified" if participant in SIMPLIFIED_PARTICIPANTS else "extended",
                    "occupation": match["occupation"],
                    "participant": participant,
                    "answer": answer,
                    "id": f"{match['occupation']}_{participant}_{answer}",
                    "sentence": sentence,
                    "well_specified": _well_specified(participant, answer),
                    "date": int(date),
                    "pronoun": PRONOUNS[match["pronoun"]],
                    "share": float(value),
                }
            )
    if not records:
        raise BiaslensError(
            f"{source}: no output files named {{f,m,n}}p_wikibio_<model>_date_<occupation>_"
            "<participant>_<0|1>_test<True|False>[_P<n>].csv"
        )
    long = pd.DataFrame(records)
    keys = ["model", "prompt", "test", "set", "occupation", "participant", "answer", "id", "date"]
    wide = long.pivot_table(
        index=[*keys, "well_specified"], columns="pronoun", values="share", aggfunc="first"
    ).reset_index()
    wide.columns.name = None
    sentences = long.drop_duplicates("id")[["id", "sentence"]]
    wide = wide.merge(sentences, on="id", how="left")
    for pronoun in PRONOUNS.values():
        if pronoun not in wide:
            wide[pronoun] = np.nan
    return wide.rename(columns={p: f"pct_{p}" for p in PRONOUNS.values()})


def read_biaslens_outputs(path: Path) -> pd.DataFrame:
    """A ``sib-detect`` run's per-sample table (folder or ``samples.parquet``) in the same
    long layout (shares normalised here)."""
    path = Path(path)
    file = path / "samples.parquet" if path.is_dir() else path
    needed = ("set", "id", "date", "p_female", "p_male", "p_neutral")
    samples = read_table(file, "sib-detect samples table", needed, ("set", "id", "date"))
    for column in ("p_female", "p_male", "p_neutral"):
        samples[column] = checked_numbers(
            samples[column].reset_index(drop=True), file, f"row {column}", 0.0, MASS_MAX, 0
        )
    sentences_file = file.parent / "sentences.parquet"
    truth = (
        read_table(
            sentences_file,
            "sib-detect sentences table",
            ("set", "id", "occupation", "well_specified"),
            ("set", "id"),
        )
        if sentences_file.exists()
        else None
    )
    if truth is not None and truth["well_specified"].isna().any():
        raise BiaslensError(f"{sentences_file}: 'well_specified' is empty for some sentences")
    table = samples.copy()
    total = table[["p_female", "p_male", "p_neutral"]].sum(axis=1).replace(0, np.nan)
    for pronoun in PRONOUNS.values():
        table[f"pct_{pronoun}"] = table[f"p_{pronoun}"] / total * 100.0
    if truth is not None:
        table = table.merge(
            truth[["set", "id", "occupation", "well_specified"]], on=["set", "id"], how="left"
        )
    elif "well_specified" not in table:
        raise BiaslensError(f"{file}: no sentences.parquet beside it for the ground truth")
    table["model"] = file.parent.name
    table["prompt"] = ""
    table["test"] = False
    return table


def read_outputs(path: Path) -> pd.DataFrame:
    """Either layout: a ``sib-detect`` run (``samples.parquet``) or a folder of released CSVs."""
    path = Path(path)
    if (path / "samples.parquet").is_file() or path.suffix == ".parquet":
        return read_biaslens_outputs(path)
    return read_reference_outputs(path)
