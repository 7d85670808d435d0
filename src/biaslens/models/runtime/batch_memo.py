"""The batch sizes ``--batch-size auto`` settled on, remembered across runs with their rates."""

from __future__ import annotations

import json
import math
from pathlib import Path

from biaslens.common import atomic

MEMO_FILE = "batch_sizes.json"


class BatchSizeMemo:
    """Chosen batch sizes by key (model fingerprint, device, dtype, request type, length
    bucket), each with the rate it was measured at, in a small JSON file of the user cache. A
    missing or damaged file is an empty memo: the size is measured again."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from biaslens.common.paths import cache_root

            path = cache_root() / MEMO_FILE
        self.path = Path(path)

    def _read(self) -> dict[str, dict]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        entries = {}
        for key, value in data.items():
            if isinstance(value, int) and not isinstance(value, bool):
                value = {"size": value}  # written before rates were kept
            if not isinstance(value, dict):
                continue
            size, rate = value.get("size"), value.get("rate")
            if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                good_rate = isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0
                entries[key] = {"size": size, "rate": float(rate) if good_rate else None}
        return entries

    def get(self, key: str) -> int | None:
        entry = self._read().get(key)
        return entry["size"] if entry else None

    def get_entry(self, key: str) -> tuple[int, float | None] | None:
        """The remembered size and the tokens/s it ran at (None: unknown)."""
        entry = self._read().get(key)
        return (entry["size"], entry["rate"]) if entry else None

    def put(self, key: str, size: int, rate: float | None = None) -> None:
        data = self._read()
        data[key] = {"size": size, "rate": rate}
        try:
            atomic.write_json(self.path, data)
        except OSError:
            pass  # a read-only cache only costs a new measurement next time
