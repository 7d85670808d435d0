"""Progress reporting, decoupled from the methods: a method asks for a task and ticks it.

The library default shows nothing; the CLI passes ``RichProgress`` (bars with throughput and
ETA) on a terminal, and ``PlainProgress`` (a line every few seconds) when its output goes to a
file, a pipe or a notebook, where bars would show nothing until the end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, TextIO

Tick = Callable[[int], None]


class Progress(Protocol):
    def task(self, description: str, total: int, unit: str = "req") -> Tick:
        """A task of ``total`` units (``req``: requests; e.g. ``contexts``)."""
        ...


class NoProgress:
    def task(self, description: str, total: int, unit: str = "req") -> Tick:
        return lambda n: None


class RichProgress:
    """Rich progress bars with counts, requests/s and time remaining."""

    def __init__(self, progress) -> None:
        self._progress = progress

    @classmethod
    @contextmanager
    def open(cls) -> Iterator[RichProgress]:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as _Progress

        columns = (
            # descriptions hold model names and paths: never read as markup
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}", markup=False),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
        )
        with _Progress(*columns, transient=False) as progress:
            yield cls(progress)

    def task(self, description: str, total: int, unit: str = "req") -> Tick:
        task_id = self._progress.add_task(description, total=total, rate="")

        def tick(n: int) -> None:
            self._progress.advance(task_id, n)
            task = self._progress.tasks[task_id]
            if task.elapsed:
                rate = f"{task.completed / task.elapsed:.1f} {unit}/s"
                self._progress.update(task_id, rate=rate)

        return tick


class PlainProgress:
    """One plain line per task every ``interval`` seconds and when it completes:
    ``description: 120/1,800 (7%) 6.3 req/s, 0:00:19 elapsed, eta 0:04:27`` (no bars, no
    cursor movement: readable in a log file)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self.interval = interval
        self._clock = clock

    def task(self, description: str, total: int, unit: str = "req") -> Tick:
        start = self._clock()
        state = {"done": 0, "shown": start}

        def tick(n: int) -> None:
            state["done"] += n
            now = self._clock()
            finished = state["done"] >= total
            if finished or now - state["shown"] >= self.interval:
                state["shown"] = now
                self._write(description, state["done"], total, unit, now - start)

        return tick

    def _write(self, description: str, done: int, total: int, unit: str, elapsed: float) -> None:
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = _clock_time((total - done) / rate) if rate > 0 and done < total else "—"
        share = f" ({100 * done / total:.0f}%)" if total else ""
        line = (
            f"{description}: {done:,}/{total:,}{share} {rate:.1f} {unit}/s, "
            f"{_clock_time(elapsed)} elapsed, eta {eta}"
        )
        stream = self._stream or sys.stderr
        print(line, file=stream, flush=True)


def _clock_time(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
