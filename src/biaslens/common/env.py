"""Settings read from environment variables, parsed in one place with a type and a range: a value
that is not one is a one-line error naming the variable, never a silent fallback or clamp."""

from __future__ import annotations

import math
import os

from biaslens.errors import BiaslensError


def number_from_env(
    name: str,
    default: float,
    kind: type = float,
    minimum: float | None = None,
    maximum: float | None = None,
    what: str = "a number",
) -> float:
    """``$name`` as an ``int`` or finite ``float`` within [``minimum``, ``maximum``]
    (``default`` when unset or empty); anything else is one line naming the variable."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = kind(text.strip())
    except ValueError:
        value = None
    if value is not None and kind is float and not math.isfinite(value):
        value = None
    if (
        value is None
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        bounds = _bounds(minimum, maximum)
        raise BiaslensError(f"{name}={text!r}: give {what}{bounds}")
    return value


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum:g} to {maximum:g}"
    if minimum is not None:
        return f" of {minimum:g} or more"
    if maximum is not None:
        return f" of {maximum:g} or less"
    return ""


def seconds_from_env(name: str, default: float, allow_zero: bool = False) -> float:
    """A number of seconds from ``$name`` (``default`` when unset): positive and finite, or 0
    too where ``allow_zero``."""
    kind = "a number of seconds (0 or more)" if allow_zero else "a positive number of seconds"
    value = number_from_env(name, default, float, what=kind)
    if value < 0 or (value == 0 and not allow_zero):
        raise BiaslensError(f"{name}={os.environ.get(name)!r}: give {kind}")
    return value


def flag_from_env(name: str) -> bool:
    """``$name`` as on/off: 1/true/yes/on or 0/false/no/off (unset or empty: off)."""
    text = (os.environ.get(name) or "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise BiaslensError(f"{name}={os.environ.get(name)!r}: give 1 (on) or 0 (off)")
