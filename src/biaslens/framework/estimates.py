"""A run's headline numbers in one tidy layout: ``summary.json``'s ``estimates``.

One record per headline metric and table row: the metric, the row's labels (prompt, gender,
set…), the value, its interval and level, n and what n counts, and the metric's meaning
(:mod:`biaslens.metrics.meanings`). Every method's summary has the same list, so that runs of
any method can be read and compared the same way (:func:`biaslens.load_runs`).
"""

from __future__ import annotations

from typing import Any, Literal

from biaslens.common.numbers import finite_or_none, readable, readable_interval, text_or_none
from biaslens.metrics.intervals import LEVEL, SMALL_N
from biaslens.metrics.meanings import mostly_noise


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
                low = finite_or_none(row.get(f"{measure.ci_prefix}_ci_low"))
                high = finite_or_none(row.get(f"{measure.ci_prefix}_ci_high"))
                has_interval = low is not None and high is not None
                n = measure.n_of(row)
                why_not = text_or_none(row.get(f"{measure.ci_prefix}_ci_note"))
                caution = text_or_none(row.get(measure.caution)) if measure.caution else None
                crossfit = finite_or_none(row.get(measure.crossfit)) if measure.crossfit else None
                noise = mostly_noise(finite_or_none(row[measure.column]), crossfit)
                records.append(
                    {
                        "table": headline.table,
                        "metric": measure.column,
                        "symbol": measure.symbol,
                        "labels": labels,
                        "value": finite_or_none(row[measure.column]),
                        "ci_low": low,
                        "ci_high": high,
                        "ci_level": level if has_interval else None,
                        "interval": measure.interval if has_interval else None,
                        "no_interval": None if has_interval else (why_not or "not computed"),
                        "conservative": measure.conservative if has_interval else None,
                        "estimand": measure.estimand_of(row) or None,
                        "caution": caution,
                        "crossfit": crossfit,
                        "mostly_noise": noise,
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
        examples = {}
        for e in small:  # one example per unit: a TNR counts other sentences than a TPR
            examples.setdefault(e.get("n_unit") or "units", f"{e['symbol']} with n = {e['n']}")
        shown = "; ".join(f"{example} {unit}" for unit, example in examples.items())
        notes.append(
            f"{len(small)} value(s) rest on fewer than {SMALL_N} units ({shown}): their "
            "intervals are wide"
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
        named = [
            e["symbol"] + (f" ({where})" if where else "")
            for e, where in zip(estimates, row_names(estimates), strict=True)
            if e.get("includes_no_bias")
        ]
        shown = "; ".join(named[:6]) + (f"; and {len(named) - 6} more" if len(named) > 6 else "")
        values = sorted({f"{e['no_bias_value']:g}" for e in holding})
        notes.append(
            f"{len(holding)} interval(s) include the no-bias value ({', '.join(values)}): "
            f"{shown}; those values are not distinguishable from no bias"
        )
    return notes


# ------------------------------------------------------------------ verdicts

Verdict = Literal["bias", "no evidence", "no verdict", "reported"]
"""What an interval allows one to say of a value (:func:`verdict_of`): evidence of bias (the
interval excludes the no-bias value), no evidence (it holds it: not evidence of absence), no
verdict (a caution, or no interval), reported (no single value reads as no bias)."""

LABEL_NAMES = {"w_kind": "W"}


def labels_text(labels: dict[str, Any]) -> str:
    """``prompt A, w kind dates``: which row of a table a number is."""
    return ", ".join(f"{LABEL_NAMES.get(k, k.replace('_', ' '))} {v}" for k, v in labels.items())


def _interval_text(record: dict[str, Any]) -> str:
    level = record.get("ci_level") or LEVEL
    return f"{level:.0%} CI {readable_interval(record['ci_low'], record['ci_high'])}"


def verdict_of(record: dict[str, Any], where: str | None = None) -> tuple[Verdict, str]:
    """The verdict of one ``summary.json`` estimate (:data:`Verdict`) and its sentence: the
    value, its interval and n, and what the verdict rests on (the bound that clears the no-bias
    value, or why there is none). A value that rests on fewer than
    :data:`~biaslens.metrics.intervals.SMALL_N` units keeps its interval's verdict (the
    intervals cover at their level on such designs too) and says that the interval is wide.
    ``where`` names the row (default: all its labels)."""
    symbol = record["symbol"]
    value = record.get("value")
    where = labels_text(record.get("labels") or {}) if where is None else where
    head = f"{symbol}" + (f" ({where})" if where else "")
    if value is None:
        return "no verdict", f"{head}: no value ({record.get('no_interval') or 'not computed'})"
    shown = readable(value)
    if record.get("caution"):
        return "no verdict", f"{head} = {shown}: no verdict — {record['caution']}"
    if record.get("ci_low") is None or record.get("ci_high") is None:
        why = record.get("no_interval") or "no interval"
        return "no verdict", f"{head} = {shown}: no verdict — {why}"
    if record.get("mostly_noise"):
        shown += f" (plug-in mostly noise: cross-fitted {readable(record['crossfit'])})"
    n = record.get("n")
    interval = f"{_interval_text(record)}" + (
        f", n = {n} {record.get('n_unit') or 'units'}" if n is not None else ""
    )
    reference = record.get("no_bias_value")
    if reference is None:
        return "reported", (
            f"{head} = {shown} ({interval}): reported without a verdict (no single value reads "
            f"as no bias; {record.get('no_bias')})"
        )
    low, high = record["ci_low"], record["ci_high"]
    wide = " (few units: a wide interval)" if record.get("small_n") else ""
    if low <= reference <= high:
        return "no evidence", (
            f"{head} = {shown} ({interval}){wide}: the interval includes {reference:g}"
        )
    side = (
        f"lower bound {readable(low)} > {reference:g}"
        if low > reference
        else f"upper bound {readable(high)} < {reference:g}"
    )
    return "bias", f"{head} = {shown} ({interval}){wide}: {side}"


def row_names(records: list[dict[str, Any]]) -> list[str]:
    """Each record's row as text, by the labels whose value differs between ``records`` (the
    others say nothing about which row is which): ``W dates``, not ``prompt A, W dates``
    where every row has prompt A."""
    seen: dict[str, set[str]] = {}
    for record in records:
        for key, value in (record.get("labels") or {}).items():
            seen.setdefault(key, set()).add(str(value))
    varying = {key for key, values in seen.items() if len(values) > 1}
    return [
        labels_text({k: v for k, v in (record.get("labels") or {}).items() if k in varying})
        for record in records
    ]


VERDICT_WORDS = {
    "bias": "evidence of bias",
    "no evidence": "no evidence of bias",
    "reported": "reported without a verdict",
    "no verdict": "no verdict",
}


def findings(estimates: list[dict[str, Any]]) -> list[str]:
    """The run's finding, one line per value of its first headline table (the number the
    method exists to report), each with its interval and the verdict that interval allows."""
    if not estimates:
        return []
    first = [e for e in estimates if e.get("table") == estimates[0].get("table")]
    lines = []
    for record, where in zip(first, row_names(first), strict=True):
        verdict, text = verdict_of(record, where)
        lines.append(f"{text} — {VERDICT_WORDS[verdict]}")
    return lines
