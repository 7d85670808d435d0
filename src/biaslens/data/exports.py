"""The probe sets biaslens generates, as tables others can load (``biaslens datasets export``).

Each method family declares its own sets (``methods/<family>/exports.py``) with
:func:`register_sets`: each entry builds the exact rows a run reads, in the order it reads them,
and says where they come from and under which license. The writing (formats, card, atomic
folder) is :mod:`biaslens.data.export_writer`; the sets of every family, loaded, are
:func:`biaslens.framework.registry.exportable_sets`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from biaslens.errors import BiaslensError


@dataclass(frozen=True)
class ExportableSet:
    """A generated probe set: ``chunks(data_dir)`` yields its rows in order."""

    name: str
    description: str
    source: str
    license: str
    how: str
    chunks: Callable[[Path | None], Iterator[pd.DataFrame]]


def one_table(build: Callable[[Path | None], pd.DataFrame]):
    """``chunks`` of a set built as one table."""
    return lambda data_dir: iter([build(data_dir)])


SETS: dict[str, ExportableSet] = {}
"""Every exportable set registered so far, by name, in the order registered."""


def register_sets(*sets: ExportableSet) -> None:
    """Add a family's sets (a second set of one name is a bug)."""
    for entry in sets:
        if entry.name in SETS and SETS[entry.name] is not entry:
            raise ValueError(f"the exportable set {entry.name!r} is registered twice")
        SETS[entry.name] = entry


NOT_EXPORTABLE = {
    "simplified-reference": "the SIB authors' Simplified file has no license: biaslens fetches "
    "it for a run and never redistributes it (export sib-simplified, biaslens's own)",
}


def exportable(name: str, sets: Mapping[str, ExportableSet]) -> ExportableSet:
    """The set ``name`` among ``sets``, or one line naming those that can be exported."""
    if name in NOT_EXPORTABLE:
        raise BiaslensError(f"{name} cannot be exported: {NOT_EXPORTABLE[name]}")
    if name not in sets:
        raise BiaslensError(f"unknown set {name!r}; exportable: {', '.join(sets)}")
    return sets[name]
