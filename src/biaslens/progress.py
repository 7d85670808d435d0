"""Progress reporting, decoupled from the methods: a method asks for a task and ticks it.

The library default shows nothing; the CLI passes ``RichProgress`` (bars with throughput and
ETA) on a terminal, and ``PlainProgress`` (a line every few seconds) when its output goes to a
file, a pipe or a notebook, where bars would show nothing until the end.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, TextIO

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as _Progress

from biaslens.common.inert import escaped_controls

Tick = Callable[[int], None]


class Progress(Protocol):
    def task(self, description: str, total: int, unit: str = "req") -> Tick:
        """A task of ``total`` units (``req``: requests; e.g. ``contexts``)."""
        ...

    def note(self, message: str) -> None:
        """A line the user should read before the work starts (where the results will go)."""
        ...


def note(progress: object, message: str) -> None:
    """``progress.note(message)``, where a progress object (perhaps a caller's own, written
    before notes existed) has one."""
    method = getattr(progress, "note", None)
    if callable(method):
        method(message)


class NoProgress:
    def task(self, description: str, total: int, unit: str = "req") -> Tick:
        return lambda n: None

    def note(self, message: str) -> None:
        pass


class RichProgress:
    """Rich progress bars with counts, requests/s and time remaining."""

    def __init__(self, progress) -> None:
        self._progress = progress

    @classmethod
    @contextmanager
    def open(cls) -> Iterator[RichProgress]:
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
        task_id = self._progress.add_task(escaped_controls(description), total=total, rate="")

        def tick(n: int) -> None:
            self._progress.advance(task_id, n)
            task = self._progress.tasks[task_id]
            if task.elapsed and task.elapsed >= MIN_RATE_SECONDS:
                rate = f"{task.completed / task.elapsed:.1f} {unit}/s"
                self._progress.update(task_id, rate=rate)

        return tick

    def note(self, message: str) -> None:
        self._progress.console.print(escaped_controls(message), markup=False, highlight=False)


MIN_RATE_SECONDS = 1.0
"""A rate (and the time left) is shown once it rests on at least this long after the first
answered batch: two batches a microsecond apart (answers from the cache) give no rate."""


class PlainProgress:
    """A plain line every ``interval`` seconds from the start, and when a task completes:
    ``description: 120/1,800 (7%) 6.3 req/s, 0:00:19 elapsed, eta 0:04:27`` (no bars, no
    cursor movement: readable in a log file). The rate and the time left are measured from a
    task's first answered batch (a model still loading or warming up does not count) and shown
    from its second; before any task, a line says the run is starting. Lines between ticks come
    from :meth:`beat`, which :meth:`running` calls from a thread of its own."""

    def __init__(
        self,
        stream: TextIO | None = None,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._last_line = self._started
        self._current: dict | None = None

    @classmethod
    @contextmanager
    def running(
        cls, interval: float = 5.0, stream: TextIO | None = None
    ) -> Iterator[PlainProgress]:
        """A progress that writes a line at least every ``interval`` seconds while the block
        runs, ticks or not (model loading, data reading, a long first batch)."""
        progress = cls(stream, interval)
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(max(interval, 0.1)):
                progress.beat()

        thread = threading.Thread(target=heartbeat, name="progress", daemon=True)
        thread.start()
        try:
            yield progress
        finally:
            stop.set()
            thread.join(timeout=5)

    def task(self, description: str, total: int, unit: str = "req") -> Tick:
        now = self._clock()
        state = {
            "description": description,
            "total": total,
            "unit": unit,
            "start": now,
            "done": 0,
            "shown": now,
            "first": None,
        }
        with self._lock:
            self._current = state

        def tick(n: int) -> None:
            with self._lock:
                state["done"] += n
                now = self._clock()
                if state["first"] is None:
                    state["first"] = (now, state["done"])
                finished = state["done"] >= total
                if finished or now - state["shown"] >= self.interval:
                    state["shown"] = now
                    self._write_task(state, now)

        return tick

    def note(self, message: str) -> None:
        with self._lock:
            self._print(message)

    def beat(self) -> None:
        """A line if none came for ``interval`` seconds: the task under way, or that the run
        is starting (loading the model and its data)."""
        with self._lock:
            now = self._clock()
            if now - self._last_line < self.interval:
                return
            state = self._current
            if state is not None and state["done"] < state["total"]:
                state["shown"] = now
                self._write_task(state, now)
            else:
                elapsed = _clock_time(now - self._started)
                what = "working" if state is not None else "starting (model and data)"
                self._print(f"{what}: {elapsed} elapsed")

    def _write_task(self, state: dict, now: float) -> None:
        done, total, unit = state["done"], state["total"], state["unit"]
        share = f" ({100 * done / total:.0f}%)" if total else ""
        line = f"{state['description']}: {done:,}/{total:,}{share}"
        first = state["first"]
        measured = first is not None and now - first[0] >= MIN_RATE_SECONDS and done > first[1]
        if measured:
            rate = (done - first[1]) / (now - first[0])
            eta = _clock_time((total - done) / rate) if done < total else "—"
            line += f" {rate:.1f} {unit}/s, {_clock_time(now - state['start'])} elapsed, eta {eta}"
        else:
            line += f", {_clock_time(now - state['start'])} elapsed"
        self._print(line)

    def _print(self, line: str) -> None:
        self._last_line = self._clock()
        print(escaped_controls(line), file=self._stream or sys.stderr, flush=True)


def _clock_time(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ChunkProgress:
    """One chunk's request progress shown on a run's one bar, counted in the chunk's units
    (e.g. UnQover's contexts)."""

    def __init__(self, tick, contexts: int) -> None:
        self.tick, self.contexts, self.shown = tick, contexts, 0

    def task(self, description: str, total: int, unit: str = "req"):
        """A tick in whole units (a request is a part of one: 1,152/1,200, never 1,152.0);
        a chunk asked in two rounds (sampled scoring's pilot, then the allocated replies)
        fills the bar once, with its first round."""
        done = [0]

        def tick(n: int) -> None:
            done[0] += n
            now = min(done[0] * self.contexts // max(total, 1), self.contexts)
            if now > self.shown:
                self.tick(now - self.shown)
                self.shown = now

        return tick
