"""What each printed column of a headline table means: the legend the CLI prints under a table.

A headline's headline metrics are explained by their :class:`~biaslens.metrics.meanings.Measure`
(definition, range, no-bias value); every other column it prints — labels, counts, intervals,
helper values — by the headline's own ``legend`` or, for the columns that mean the same in every
method, by :data:`COMMON`. A legend key ``*`` stands for columns named by the run's data (a
name group, a direction).
"""

from __future__ import annotations

from collections.abc import Sequence

from biaslens.store.output_files import GLOSSARY

COMMON: dict[str, str] = {
    "parameters": "the model's parameter count",
    "CI": "the value's interval at --ci-level (95% by default)",
    "interval": "the value's interval at --ci-level (95% by default), or why it has none",
    "W": "the injected W values: dates or places",
    "scoring": "how the QA scores were read (extractive spans, generative choices, fill-mask, "
    "first-token top-20)",
    "λ": "CID's λ (Eq. 1): 0 decodes greedily; a larger λ favours tokens x makes more likely "
    "than x' does",
}
"""Printed columns that mean the same wherever they are and that no run file holds (those are
the run files' glossary's, :data:`biaslens.store.output_files.GLOSSARY`: no column is in
both)."""


def legend_lines(spec, headline, columns: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each printed column of ``headline`` that is not a headline metric (those are explained
    with the measures) and its meaning: the headline's ``legend``, else the meaning the run
    folder's file of that table gives the column, else :data:`COMMON`; None where none has
    one."""
    symbols = measure_symbols(spec)
    stored = next((o for o in spec.outputs if o.name.rsplit(".", 1)[0] == headline.table), None)
    lines = []
    for column in map(str, columns):
        if column in symbols:
            continue
        meaning = (
            headline.legend.get(column)
            or (spec.meaning(stored, column) if stored is not None else "")
            or COMMON.get(column)
            or GLOSSARY.get(column)
            or headline.legend.get("*")
        )
        lines.append((column, meaning or None))
    return lines


def shown_table(headline, table):
    """The table as the CLI prints it (the headline's view) and the columns it prints."""
    frame = headline.view(table) if headline.view is not None else table
    columns = [c for c in (headline.columns or frame.columns) if c in frame.columns]
    return frame, columns


def measure_symbols(spec) -> set[str]:
    """The symbols of a method's headline metrics (explained under "reading the numbers")."""
    return {m.symbol for headline in spec.headlines for m in headline.measures}
