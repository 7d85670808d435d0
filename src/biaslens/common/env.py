"""Settings read from environment variables, checked like options: a value that is not one is a
one-line error naming the variable, never a silent fallback."""

from __future__ import annotations

import math
import os

from biaslens.errors import BiaslensError


def seconds_from_env(name: str, default: float, allow_zero: bool = False) -> float:
    """A number of seconds from ``$name`` (``default`` when unset): positive and finite, or 0
    too where ``allow_zero``."""
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value if allow_zero else 0 < value) or not math.isfinite(value):
        kind = "a number of seconds (0 or more)" if allow_zero else "a positive number of seconds"
        raise BiaslensError(f"{name}={text!r}: give {kind}")
    return value
