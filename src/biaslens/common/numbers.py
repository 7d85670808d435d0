"""Numbers as people read them: the same rule in the terminal, the notes and the report."""

from __future__ import annotations

import math


def readable(value: float, signed: bool = False) -> str:
    """Four decimals where they show the value (|v| ≥ 0.001, or exactly 0); three significant
    digits otherwise, so that a small model's slope prints as ``3.35e-05``, not ``0.0000``."""
    sign = "+" if signed else ""
    if not math.isfinite(value):
        return str(value)
    if value == 0 or abs(value) >= 1e-3:
        return f"{value:{sign}.4f}"
    return f"{value:{sign}.2e}"


def readable_interval(low: float, high: float, signed: bool = False) -> str:
    """``[low, high]``, each bound :func:`readable`."""
    return f"[{readable(low, signed)}, {readable(high, signed)}]"


def readable_column(values) -> list[str | None]:
    """One notation for a whole column, the rule of :func:`readable` applied to the column so
    that its numbers line up and compare at a glance: whole numbers as such; four decimals;
    three significant digits in scientific notation for every value where one is below 0.001
    (never ``0.0000152`` beside ``3.36e-05`` on one screen). None where a cell is not a finite
    float (the caller formats it)."""
    finite = [float(v) for v in values if isinstance(v, float) and math.isfinite(v)]
    smallest = min((abs(v) for v in finite if v != 0), default=1.0)
    if finite and all(v.is_integer() and abs(v) < 1e9 for v in finite):
        shape = ".0f"  # whole numbers stored as floats (λ = 5.0, a count beside NaN)
    elif smallest >= 1e-3:
        shape = ".4f"
    else:
        shape = ".2e"
    return [
        format(float(v), shape) if isinstance(v, float) and math.isfinite(v) else None
        for v in values
    ]


def text_or_none(value) -> str | None:
    """``value`` as text, or None where it is empty or not text (a table's missing cell: NaN)."""
    return value if isinstance(value, str) and value else None


def finite_or_none(value) -> float | None:
    """``value`` as a float, or None where it is not a finite number (a CSV's empty cell, NaN)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
