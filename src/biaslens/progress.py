"""Progress reporting, decoupled from the methods: a method asks for a task and ticks it.

The library default shows nothing; the CLI passes ``RichProgress`` (throughput and ETA).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

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
