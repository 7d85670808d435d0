"""The SIB authors' released Method 1 outputs on MGC, read into sentence × W matrices.

The reference repository (``2dot71mily/sib_paper``, ``data/spur_mgc_raw/``) holds one file per
model, pronoun gender, W kind and instruction prompt: ``{f,m,n}p_wikibio_<model>_<date|place>
__test<True|False>[_P<n>].csv``, with one row per W value (in the order the reference code
fits its line over) and one column per MGC sentence, each cell the pronoun probability in
percent. ``_P<n>`` names an instruction model's prompt (P1 = C, P2 = B, P3 = A: the
reference ``config.py``'s ``PROMPT_2_NAME``); ``testTrue`` files are the code's small test
subsets.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.common.files import read_text
from biaslens.errors import BiaslensError
from biaslens.methods.sib.data.released_outputs import SHARE_MAX, checked_columns

MGC_NAME = re.compile(
    r"^(?P<pronoun>[fmn])p_wikibio_(?P<model>.+)_(?P<w>date|place)__test(?P<test>True|False)"
    r"(?:_P(?P<prompt>\d+))?$"
)
PROMPT_NAMES = {"1": "C", "2": "B", "3": "A"}
"""The reference code's prompt numbers and the paper's (Appendix D.2) names."""
GENDERS = {"f": "female", "m": "male", "n": "neutral"}
W_KINDS = {"date": "dates", "place": "places"}
HUB_ORGANISATIONS = ("facebook", "google")
"""Hub organisations whose ``/`` the reference code's file names write as ``_``."""


def hub_name(file_model: str) -> str:
    """A file's model name as the hub names it (``facebook_bart-base`` → ``facebook/bart-base``)."""
    for organisation in HUB_ORGANISATIONS:
        if file_model.startswith(organisation + "_"):
            return organisation + "/" + file_model[len(organisation) + 1 :]
    return file_model


@dataclass(frozen=True)
class MgcOutputs:
    """One released model × W kind × prompt: per gender a (sentences × W) matrix in percent,
    the W values in the file's order and the file each matrix came from."""

    model: str
    w_kind: str
    prompt: str
    w_values: tuple[str, ...]
    sentences: tuple[str, ...]
    values: dict[str, np.ndarray]
    files: dict[str, str]


def _read_one(path: Path) -> pd.DataFrame:
    try:
        table = pd.read_csv(io.StringIO(read_text(path, "output file")), index_col=0)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise BiaslensError(f"{path}: not a CSV table ({error})") from None
    if len(table.columns) < 2:
        raise BiaslensError(f"{path}: expected the columns ',<W>,<sentence>…'")
    return table


def read_mgc_outputs(folder: Path, include_tests: bool = False) -> list[MgcOutputs]:
    """Every released model × W kind × prompt below ``folder`` (the full sets only, unless
    ``include_tests``); a file whose numbers are not percentages is an error naming it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BiaslensError(f"{folder}: no such folder of released MGC outputs")
    groups: dict[tuple[str, str, str], dict[str, Path]] = {}
    for path in sorted(folder.glob("*.csv")):
        match = MGC_NAME.match(path.stem)
        if match is None or (match["test"] == "True" and not include_tests):
            continue
        prompt = PROMPT_NAMES.get(match["prompt"] or "", "mask" if not match["prompt"] else "")
        if not prompt:
            raise BiaslensError(f"{path}: unknown prompt number P{match['prompt']}")
        key = (
            hub_name(match["model"]) + ("-test" if match["test"] == "True" else ""),
            W_KINDS[match["w"]],
            prompt,
        )
        groups.setdefault(key, {})[GENDERS[match["pronoun"]]] = path
    found = []
    for (model, w_kind, prompt), paths in sorted(groups.items()):
        if set(paths) != set(GENDERS.values()):
            missing = sorted(set(GENDERS.values()) - set(paths))
            raise BiaslensError(f"{folder}: {model} {w_kind} has no {', '.join(missing)} file")
        tables = {gender: _read_one(path) for gender, path in paths.items()}
        first = tables["female"]
        w_column = first.columns[0]
        sentences = tuple(str(c) for c in first.columns[1:])
        values = {}
        for gender, table in tables.items():
            if list(table.columns) != list(first.columns) or list(table[w_column]) != list(
                first[w_column]
            ):
                raise BiaslensError(
                    f"{paths[gender]}: its W values or sentences differ from {paths['female']}"
                )
            values[gender] = checked_columns(  # sentences × W
                table, table.columns[1:], paths[gender], "probability (%)", 0.0, SHARE_MAX, 2
            )
        found.append(
            MgcOutputs(
                model=model,
                w_kind=w_kind,
                prompt=prompt,
                w_values=tuple(str(w) for w in first[w_column]),
                sentences=sentences,
                values=values,
                files={g: p.name for g, p in paths.items()},
            )
        )
    if not found:
        raise BiaslensError(
            f"{folder}: no files named {{f,m,n}}p_wikibio_<model>_<date|place>__test<True|False>"
            "[_P<n>].csv"
        )
    return found
