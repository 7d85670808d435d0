"""Measured speed of earlier audit steps, for the plan's time estimates.

After each step that computed answers, the tokens it had the model read or write per second
are kept per model, backend and method in ``<cache root>/audit-rates.json``; a plan's
estimate is its token count over that rate. A model × method never measured has no estimate
(the plan says so) rather than a guess.
"""

from __future__ import annotations

import json
from pathlib import Path

from biaslens.common import atomic
from biaslens.common.paths import cache_root

RATES_FILE = "audit-rates.json"


def _path() -> Path:
    return cache_root() / RATES_FILE


def _key(model: str, backend: str, method: str) -> str:
    return f"{model}|{backend}|{method}"


def _read() -> dict[str, float]:
    try:
        held = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(held, dict):
        return {}
    return {k: float(v) for k, v in held.items() if isinstance(v, (int, float)) and v > 0}


def estimate(model: str, backend: str, method: str, tokens: int) -> float | None:
    """Seconds ``tokens`` would take at the measured rate (None: never measured)."""
    rate = _read().get(_key(model, backend, method))
    return tokens / rate if rate else None


def record(model: str, backend: str, method: str, tokens: float, seconds: float) -> None:
    """Keep the rate of a step that computed ``tokens`` in ``seconds`` (best effort: a cache
    folder that cannot be written loses only the estimate)."""
    if tokens <= 0 or seconds <= 0:
        return
    held = _read()
    held[_key(model, backend, method)] = tokens / seconds
    try:
        _path().parent.mkdir(parents=True, exist_ok=True)
        atomic.write_json(_path(), held)
    except OSError:
        pass
