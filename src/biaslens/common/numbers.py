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
