"""A run's headline numbers in one tidy layout: ``summary.json``'s ``estimates``.

One record per headline metric and table row: the metric, the row's labels (prompt, gender,
set…), the value, its interval and level, n and what n counts, and the metric's meaning
(:mod:`biaslens.metrics.meanings`). Every method's summary has the same list, so that runs of
any method can be read and compared the same way (:func:`biaslens.load_runs`).
"""

from __future__ import annotations

import math
from typing import Any

from biaslens.metrics.intervals import LEVEL, SMALL_N


def _text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def collect(spec, tables: dict[str, Any], level: float = LEVEL) -> list[dict[str, Any]]:
    """The estimates of the headline tables of ``spec`` among ``tables`` (intervals at
    ``level``)."""
    records = []
    for headline in spec.headlines:
        table = tables.get(headline.table)
        if not headline.measures or table is None:
            continue
        for row in table.to_dict(orient="records"):
            labels = {c: row[c] for c in headline.labels if c in row}
            for measure in headline.measures:
                if measure.column not in row:
                    continue
                low = _number(row.get(f"{measure.ci_prefix}_ci_low"))
                high = _number(row.get(f"{measure.ci_prefix}_ci_high"))
                has_interval = low is not None and high is not None
                n = measure.n_of(row)
                why_not = _text(row.get(f"{measure.ci_prefix}_ci_note"))
                caution = _text(row.get(measure.caution)) if measure.caution else None
                records.append(
                    {
                        "table": headline.table,
                        "metric": measure.column,
                        "symbol": measure.symbol,
                        "labels": labels,
                        "value": _number(row[measure.column]),
                        "ci_low": low,
                        "ci_high": high,
                        "ci_level": level if has_interval else None,
                        "interval": measure.interval if has_interval else None,
                        "no_interval": None if has_interval else (why_not or "not computed"),
                        "conservative": measure.conservative if has_interval else None,
                        "estimand": measure.estimand or None,
                        "caution": caution,
                        "n": n,
                        "n_unit": measure.n_unit or None,
                        "small_n": n is not None and n < SMALL_N,
                        "unit": measure.unit,
                        "no_bias": measure.no_bias,
                        "no_bias_value": measure.reference,
                        "includes_no_bias": measure.holds_reference(low, high),
                        "better": measure.better,
                    }
                )
    return records


def meanings(spec, tables=None) -> list[str]:
    """One line per headline metric of ``spec`` (each once); with a run's ``tables``, only of the
    headlines the run has (cid-audit's fraction biased comes once ratings are imported)."""
    seen, lines = set(), []
    for headline in spec.headlines:
        if tables is not None and headline.table not in tables:
            continue
        for measure in headline.measures:
            if measure.column not in seen:
                seen.add(measure.column)
                lines.append(measure.line())
    return lines


def interval_notes(estimates: list[dict[str, Any]]) -> list[str]:
    """Warnings about a run's estimates: values that rest on too few units for their interval
    to mean much, and intervals that include the value that reads as "no bias"."""
    notes = []
    small = [e for e in estimates if e.get("small_n")]
    if small:
        first = small[0]
        notes.append(
            f"{len(small)} value(s) rest on fewer than {SMALL_N} "
            f"{first['n_unit'] or 'units'} (e.g. {first['symbol']} with n = {first['n']}): "
            "their intervals are wide"
        )
    cautions = sorted({e["caution"] for e in estimates if e.get("caution")})
    notes += cautions
    missing = [e for e in estimates if e.get("value") is not None and e.get("no_interval")]
    if missing:
        first = missing[0]
        notes.append(
            f"{len(missing)} value(s) have no interval (e.g. {first['symbol']}: "
            f"{first['no_interval']})"
        )
    holding = [e for e in estimates if e.get("includes_no_bias")]
    if holding:
        names = ", ".join(sorted({e["symbol"] for e in holding}))
        values = sorted({f"{e['no_bias_value']:g}" for e in holding})
        notes.append(
            f"the interval of {names} includes the no-bias value ({', '.join(values)}) for "
            f"{len(holding)} value(s): those values are not distinguishable from no bias"
        )
    return notes
