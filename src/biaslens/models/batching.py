"""Length-sorted batching with an automatic batch size that halves on out-of-memory."""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

from biaslens.errors import BiaslensError

T = TypeVar("T")
R = TypeVar("R")

AUTO_START_BATCH_SIZE = 256


def is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, torch.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def _release_memory() -> None:
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


class BatchSizer:
    """Holds the current batch size; ``"auto"`` starts at ``AUTO_START_BATCH_SIZE`` and halves on
    each out-of-memory error, remembering the size that worked for later calls."""

    def __init__(self, batch_size: int | str = "auto") -> None:
        parsed = parse_batch_size(batch_size)
        self.auto = parsed == "auto"
        self.size = AUTO_START_BATCH_SIZE if self.auto else int(parsed)

    def run(
        self,
        items: Sequence[T],
        lengths: Sequence[int],
        fn: Callable[[list[T]], list[R]],
        progress: Callable[[int], None] | None = None,
    ) -> list[R]:
        """Apply ``fn`` to batches of ``items`` sorted by decreasing length (so that an
        out-of-memory error, if any, comes first) and return results in the input order."""
        order = sorted(range(len(items)), key=lambda i: -lengths[i])
        results: list[R | None] = [None] * len(items)
        start = 0
        while start < len(order):
            index = order[start : start + self.size]
            try:
                outputs = fn([items[i] for i in index])
            except Exception as error:
                if not (self.auto and is_out_of_memory(error)) or self.size == 1:
                    raise
                _release_memory()
                self.size //= 2
                continue
            for i, output in zip(index, outputs, strict=True):
                results[i] = output
            start += len(index)
            if progress is not None:
                progress(len(index))
        return results  # type: ignore[return-value]


def pad_sequences(
    sequences: Sequence[Sequence[int]], pad_id: int, left: bool, device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids padded to the longest sequence (on the left for causal prompts) and their
    attention mask, both on ``device``."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        span = slice(width - len(seq), width) if left else slice(0, len(seq))
        ids[row, span] = torch.tensor(seq)
        mask[row, span] = 1
    return ids.to(device), mask.to(device)
