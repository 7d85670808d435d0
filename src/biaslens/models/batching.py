"""Length-sorted batching with an automatic batch size chosen by measured throughput.

``--batch-size auto`` must be fast, not only safe: on a CPU a batch of 256 is slower than 32
(padding and cache traffic grow faster than the per-call overhead shrinks), on a GPU the
opposite holds. So the sizer measures instead of guessing: the first batches of real work run
at growing sizes (8, 16, 32, …), each timed in tokens per second, until a size is clearly
slower than the best so far (or memory runs out: an out-of-memory error halves the size); the
size settles at the fastest one measured, preferring the smaller of two within timing noise.
The chosen size is remembered per model, device and request type in the user cache, so later
runs start at it without probing. Results never depend on the batch size.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from biaslens.errors import BiaslensError

T = TypeVar("T")
R = TypeVar("R")

AUTO_FIRST_SIZE = 8
"""Where probing starts; the first batch also warms the model up and is not timed."""
AUTO_MAX_SIZE = 1024
AUTO_MAX_SIZE_CPU = 256
"""On a CPU, running out of memory kills the process instead of raising: probe less far."""
NOISE = 0.05
"""Sizes whose tokens/s differ by less than this fraction count as equally fast."""
SLOWER = 0.85
"""Probing stops at a size below this fraction of the best rate measured."""
MEMO_FILE = "batch_sizes.json"


def is_out_of_memory(error: BaseException) -> bool:
    import torch

    if isinstance(error, torch.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def _release_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def parse_batch_size(value: int | str, name: str = "batch size") -> int | str:
    """``"auto"`` or a positive integer (strings such as ``"8"`` are accepted); ``name`` is
    how the value is called in the error message."""
    if value == "auto":
        return "auto"
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise BiaslensError(f"{name} must be 'auto' or a positive integer, got {value!r}") from None
    if size < 1:
        raise BiaslensError(f"{name} must be >= 1, got {size}")
    return size


class BatchSizeMemo:
    """Chosen batch sizes by key (model fingerprint, device, dtype, request type) in a small
    JSON file of the user cache. A missing or damaged file is an empty memo: the size is
    measured again."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from biaslens.common.paths import cache_root

            path = cache_root() / MEMO_FILE
        self.path = Path(path)

    def _read(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(v, int) and v > 0}
            if isinstance(data, dict)
            else {}
        )

    def get(self, key: str) -> int | None:
        return self._read().get(key)

    def put(self, key: str, size: int) -> None:
        from biaslens.common import atomic

        data = self._read()
        data[key] = size
        try:
            atomic.write_json(self.path, data)
        except OSError:
            pass  # a read-only cache only costs a new measurement next time


class BatchSizer:
    """Holds the batch size of one request type of one model.

    A fixed size is used as given. ``"auto"`` measures (module doc): until it settles, each
    full batch is timed and the next one doubles until one is clearly slower than the best;
    then the fastest size is kept. An out-of-memory error halves the size and settles.
    ``memo`` and ``key``
    remember the settled size across runs; ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        batch_size: int | str = "auto",
        memo: BatchSizeMemo | None = None,
        key: str = "",
        clock: Callable[[], float] = time.perf_counter,
        max_size: int = AUTO_MAX_SIZE,
    ) -> None:
        parsed = parse_batch_size(batch_size)
        self.auto = parsed == "auto"
        self.memo, self.key, self.clock, self.max_size = memo, key, clock, max_size
        remembered = memo.get(key) if (self.auto and memo is not None and key) else None
        self.size = int(parsed) if not self.auto else remembered or AUTO_FIRST_SIZE
        self.settled = not self.auto or remembered is not None
        self.warmed = False
        self.rates: dict[int, float] = {}  # tokens/s by size

    def _settle(self, size: int) -> None:
        self.size, self.settled = size, True
        if self.memo is not None and self.key:
            self.memo.put(self.key, size)

    def _observe(self, tokens: int, seconds: float) -> None:
        """Throughput of one full batch at the current size: double, or settle."""
        rate = tokens / max(seconds, 1e-9)
        self.rates[self.size] = rate
        best = max(self.rates.values())
        if rate < best * SLOWER or self.size * 2 > self.max_size:
            # the smallest size within noise of the best
            self._settle(min(s for s, r in self.rates.items() if r >= best * (1 - NOISE)))
        else:
            self.size *= 2

    def run(
        self,
        items: Sequence[T],
        lengths: Sequence[int],
        fn: Callable[[list[T]], list[R]],
        progress: Callable[[int], None] | None = None,
        keys: Sequence | None = None,
    ) -> list[R]:
        """Apply ``fn`` to batches of ``items`` sorted by decreasing length (so that an
        out-of-memory error, if any, comes first), items of one length by ``keys`` if given,
        and return results in the input order."""
        if keys is None:
            order = sorted(range(len(items)), key=lambda i: -lengths[i])
        else:
            order = sorted(range(len(items)), key=lambda i: (-lengths[i], keys[i]))
        results: list[R | None] = [None] * len(items)
        start = 0
        while start < len(order):
            index = order[start : start + self.size]
            began = self.clock()
            try:
                outputs = fn([items[i] for i in index])
            except Exception as error:
                if not (self.auto and is_out_of_memory(error)) or self.size == 1:
                    raise
                _release_memory()
                self._settle(max(1, self.size // 2))
                continue
            elapsed = self.clock() - began
            for i, output in zip(index, outputs, strict=True):
                results[i] = output
            start += len(index)
            if progress is not None:
                progress(len(index))
            if not self.settled and len(index) == self.size:
                if self.warmed:
                    self._observe(sum(lengths[i] for i in index), elapsed)
                self.warmed = True
        return results  # type: ignore[return-value]
