"""Length-sorted batching with an automatic batch size chosen by measured throughput.

``--batch-size auto`` must be fast, not only safe: on a CPU a batch of 256 is slower than 32
(padding and cache traffic grow faster than the per-call overhead shrinks), on a GPU the
opposite holds. So the sizer measures instead of guessing: the first batches of real work run
at growing sizes, from the one that holds about :data:`START_TOKENS` tokens, doubling, each
size timed in tokens per second until a size is clearly slower than the best so far (or memory
runs out: an out-of-memory error halves the size); when the starting size was the fastest, the
sizes below it are tried too. The size settles at the fastest one measured, preferring the
smaller of two within timing noise. A size's rate is the best of its measures (other work on
the machine only ever slows a batch down): one full batch that runs clearly faster than every
size before it is enough to move on upwards (it can only have been slowed, never sped up);
otherwise it is timed on :data:`MEASURES` full batches, and a third when the two best disagree
by more than :data:`UNSTABLE`. Probing is work, not a separate pass: every batch's results are
kept.

The chosen size is remembered per model, device, dtype, request type and request length (a
power-of-two bucket of the mean length) in the user cache, with the rate it ran at. A
remembered size is where the next run starts, not a verdict: its first batches are timed, and
if it runs at its remembered rate (within :data:`SAME_RATE`) the conditions it was chosen under
hold and it is kept at no cost; otherwise (a size remembered from a run that shared the cores
with other work ran slower then than now, or the machine is not the same) it is measured again
against its neighbours (twice and half the size), and the search moves on in whichever
direction is faster, so the next run corrects it. Only a size settled on
stable measures is remembered; work that ends before the search settles leaves its best
measured size as the next run's starting point. Results never depend on the batch size.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from biaslens.models.options import BatchSize
from biaslens.models.runtime.batch_memo import BatchSizeMemo

T = TypeVar("T")
R = TypeVar("R")

START_TOKENS = 2048
"""A fresh search starts at the power of two nearest this many tokens per batch (e.g. 32
prompts of 64 tokens): smaller batches are rarely the fastest on any device, and each size
below the best costs the search its slowest batches. A model's first batch is an untimed
warm-up (:class:`Warmth`)."""
WARM_UP_SIZE = 4
"""The first batch a model runs warms it up and is not timed: a few requests, so that the
progress count moves within seconds (a first batch of 256 prompts sat at 0 for minutes)."""
AUTO_FIRST_SIZE = 8
"""The size reported before any request was seen."""
AUTO_MAX_SIZE = 1024
AUTO_MAX_SIZE_CPU = 256
"""On a CPU, running out of memory kills the process instead of raising: probe less far."""
NOISE = 0.05
"""Sizes whose tokens/s differ by less than this fraction count as equally fast."""
SLOWER = 0.85
"""Probing stops at a size below this fraction of the best rate measured."""
MEASURES = 2
"""Full batches timed per size; the size's rate is the best of them."""
MAX_MEASURES = 4
UNSTABLE = 0.25
"""The two best measures of a size further apart than this fraction are unstable: one more is
taken (up to :data:`MAX_MEASURES`; a measure slowed by other work is thus left behind), and a
search that ends on unstable measures is not remembered."""
SAME_RATE = 0.10
"""A remembered size that runs within this fraction of its remembered rate is confirmed."""


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


def start_size(lengths: Sequence[int], max_size: int) -> int:
    """Where a fresh search starts: the power of two nearest :data:`START_TOKENS` / the mean
    request length, within ``[1, max_size]``."""
    mean = sum(lengths) / max(1, len(lengths))
    size = 2 ** round(math.log2(max(1.0, START_TOKENS / max(1.0, mean))))
    return max(1, min(size, max_size))


def length_bucket(lengths: Sequence[int]) -> int:
    """The power of two nearest the mean request length: sizes are remembered per bucket, since
    the best batch of short prompts is not that of long ones."""
    mean = sum(lengths) / max(1, len(lengths))
    return 2 ** round(math.log2(max(1.0, mean)))


class SizeSearch:
    """The batch-size search for requests of one length bucket (module doc).

    ``remembered``: the size a previous run settled on (or its best so far), where the search
    starts and which it re-validates against its neighbours; None: start at ``first_size``
    (:func:`start_size`).
    """

    def __init__(
        self,
        remembered: int | None,
        max_size: int,
        bucket: int = 0,
        remembered_rate: float | None = None,
        first_size: int = AUTO_FIRST_SIZE,
    ) -> None:
        self.remembered, self.bucket = remembered, bucket
        self.remembered_rate = remembered_rate
        self.max_size = max_size
        self.size = min(remembered or first_size, max_size)
        self.first_size = self.size
        self.settled = False
        self.stable = True
        self.going_up = True
        self.measures: dict[int, list[float]] = {}  # tokens/s by size, every full batch timed
        self.confirmed = False
        """The remembered size ran at its remembered rate: settled without probing neighbours."""

    @property
    def rates(self) -> dict[int, float]:
        """Each measured size's rate: the best of its measures."""
        return {size: max(rates) for size, rates in self.measures.items()}

    @property
    def revalidated(self) -> bool:
        """Whether a remembered size was measured again against a neighbour."""
        return self.remembered is not None and len(self.measures) > 1

    def best_so_far(self) -> int | None:
        """The fastest size measured (None if none): what a run that ends before the search
        settles leaves as the next run's starting point, which that run re-validates. Each
        size's rate is a lower bound of its speed (a measure is only ever slowed), so the
        fastest one is the best guess even when measured once."""
        return _smallest_near_best(self.rates) if self.measures else None

    def settle(self, size: int) -> None:
        self.size, self.settled = size, True

    def observe(self, tokens: int, seconds: float) -> None:
        """One full batch at the current size took ``seconds``: measure again, move, or settle."""
        measures = self.measures.setdefault(self.size, [])
        measures.append(tokens / max(seconds, 1e-9))
        if len(measures) < MEASURES:
            if not self._clearly_fastest():
                return
        elif not _steady(measures):  # the two best disagree: a slowed batch among them
            if len(measures) < MAX_MEASURES:
                return
            self.stable = False
        if self._confirms_memo():
            self.confirmed = True
            self.settle(self.size)
            return
        following = self._next_size()
        if following is None:
            self.settle(_smallest_near_best(self.rates))
        else:
            self.size = following

    def _clearly_fastest(self) -> bool:
        """Whether, going up, the current size already ran clearly faster (beyond
        :data:`NOISE`) than every other size measured: a measure can only have been slowed by
        other work, so one more would not change the direction."""
        if not self.going_up or len(self.measures) < 2:
            return False
        rates = self.rates
        return rates[self.size] > _best_other(rates, self.size) * (1 + NOISE)

    def _confirms_memo(self) -> bool:
        """Whether the remembered size, the only one measured so far, steadily ran within
        :data:`SAME_RATE` of the rate it was remembered with: the conditions it was chosen
        under hold, and probing its neighbours would only cost time. A size remembered from a
        loaded machine ran slower then than it does now, so it is not confirmed."""
        if self.remembered_rate is None or list(self.measures) != [self.remembered]:
            return False
        if not self.stable:
            return False
        rate = self.rates[self.remembered]
        return abs(rate / self.remembered_rate - 1) <= SAME_RATE

    def _next_size(self) -> int | None:
        rates = self.rates
        best = max(rates.values())
        here = rates[self.size]
        if self.going_up:
            if here >= best * SLOWER and self.size * 2 <= self.max_size:
                return self.size * 2
            self.going_up = False
            smallest = min(rates)
            # the starting size was clearly the fastest: look below it
            if smallest > 1 and rates[smallest] > _best_other(rates, smallest) * (1 + NOISE):
                return smallest // 2
            return None
        if self.size > 1 and here == best and here > _best_other(rates, self.size) * (1 + NOISE):
            return self.size // 2
        return None


def _smallest_near_best(rates: dict[int, float]) -> int:
    """The smallest size whose rate is within :data:`NOISE` of the best."""
    best = max(rates.values())
    return min(size for size, rate in rates.items() if rate >= best * (1 - NOISE))


def _steady(measures: list[float]) -> bool:
    """Whether the two best measures of a size agree within :data:`UNSTABLE`."""
    first, second = sorted(measures, reverse=True)[:2]
    return first <= second * (1 + UNSTABLE)


def _best_other(rates: dict[int, float], size: int) -> float:
    others = [r for s, r in rates.items() if s != size]
    return max(others) if others else 0.0


@dataclass
class Warmth:
    """Whether a model has run a batch in this process. Its one-time costs (lazy set-up, the
    first allocations, a backend's once-per-model checks) are then paid, so a search of any
    request type or length starts timing from its first batch; before that, the first batch
    is a small untimed warm-up (:data:`WARM_UP_SIZE`). One per loaded model, shared by its
    sizers."""

    done: bool = False


class BatchSizer:
    """Holds the batch size of one request type of one model.

    A fixed size is used as given. ``"auto"`` searches per length bucket (:class:`SizeSearch`,
    module doc); an out-of-memory error halves the size and settles. ``memo`` and ``key``
    remember settled sizes across runs; ``clock`` is injectable for tests; ``warmth`` is the
    model's (:class:`Warmth`), shared by its sizers.
    """

    def __init__(
        self,
        batch_size: BatchSize = "auto",  # as the --batch-size option parsed it
        memo: BatchSizeMemo | None = None,
        key: str = "",
        clock: Callable[[], float] = time.perf_counter,
        max_size: int = AUTO_MAX_SIZE,
        warmth: Warmth | None = None,
    ) -> None:
        self.warmth = warmth if warmth is not None else Warmth()
        self.auto = batch_size == "auto"
        self.fixed = None if self.auto else batch_size
        self.memo, self.key, self.clock, self.max_size = memo, key, clock, max_size
        self.searches: dict[int, SizeSearch] = {}
        self.search: SizeSearch | None = None
        """The search of the latest :meth:`run` (None before the first, or for a fixed size)."""

    @property
    def size(self) -> int:
        if self.fixed is not None:
            return self.fixed
        return self.search.size if self.search is not None else AUTO_FIRST_SIZE

    @property
    def settled(self) -> bool:
        return self.fixed is not None or (self.search is not None and self.search.settled)

    @property
    def rates(self) -> dict[int, float]:
        return self.search.rates if self.search is not None else {}

    def memo_key(self, bucket: int) -> str:
        return f"{self.key}|len{bucket}"

    def _search_for(self, lengths: Sequence[int]) -> SizeSearch:
        bucket = length_bucket(lengths)
        if bucket not in self.searches:
            remembered, rate = None, None
            if self.memo is not None and self.key:
                remembered, rate = self.memo.get_entry(self.memo_key(bucket)) or (None, None)
            first = start_size(lengths, self.max_size)
            self.searches[bucket] = SizeSearch(remembered, self.max_size, bucket, rate, first)
        return self.searches[bucket]

    def _remember(self, search: SizeSearch) -> None:
        if search.stable and self.memo is not None and self.key:
            rate = search.rates.get(search.size)
            self.memo.put(self.memo_key(search.bucket), search.size, rate)

    def run(
        self,
        items: Sequence[T],
        lengths: Sequence[int],
        fn: Callable[[list[T]], list[R]],
        progress: Callable[[int], None] | None = None,
        keys: Sequence | None = None,
        keys_first: bool = False,
    ) -> list[R]:
        """Apply ``fn`` to batches of ``items`` sorted by decreasing length (so that an
        out-of-memory error, if any, comes first), items of one length by ``keys`` if given,
        and return results in the input order. ``keys_first`` sorts by ``keys`` alone: token
        ids so sorted put whole prefix subtrees in one batch, for a job that pads nothing
        between items (a packed prefix tree)."""
        if keys is None:
            order = sorted(range(len(items)), key=lambda i: -lengths[i])
        elif keys_first:
            order = sorted(range(len(items)), key=lambda i: keys[i])
        else:
            order = sorted(range(len(items)), key=lambda i: (-lengths[i], keys[i]))
        search = self._search_for(lengths) if self.auto and items else None
        self.search = search if search is not None else self.search
        results: list[R | None] = [None] * len(items)
        start = 0
        while start < len(order):
            size = search.size if search is not None else self.size
            warm = self.warmth.done
            if search is not None and not warm:  # untimed: small, so progress moves
                size = min(size, WARM_UP_SIZE)
            index = order[start : start + size]
            began = self.clock()
            try:
                outputs = fn([items[i] for i in index])
            except Exception as error:
                if search is None or not is_out_of_memory(error) or size == 1:
                    raise
                _release_memory()
                search.settle(max(1, size // 2))
                self._remember(search)
                continue
            elapsed = self.clock() - began
            for i, output in zip(index, outputs, strict=True):
                results[i] = output
            start += len(index)
            self.warmth.done = True
            if progress is not None:
                progress(len(index))
            if search is not None and not search.settled and len(index) == size and warm:
                search.observe(sum(lengths[i] for i in index), elapsed)
                if search.settled:
                    self._remember(search)
        if search is not None and not search.settled:
            self._remember_provisionally(search)
        return results  # type: ignore[return-value]

    def _remember_provisionally(self, search: SizeSearch) -> None:
        """Work that ends before the search settles still leaves its best measured size as the
        next run's starting point (which that run re-validates)."""
        best = search.best_so_far()
        if best is not None and self.memo is not None and self.key:
            # no rate: a size the search did not settle on is re-validated, never confirmed
            if self.memo.get_entry(self.memo_key(search.bucket)) != (best, None):
                self.memo.put(self.memo_key(search.bucket), best)
