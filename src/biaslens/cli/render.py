"""How the CLI shows results: one table renderer, and one printout for every method's run.

A run prints its method's headline tables (from the method registry), the method's notes, the
request counts, where the results are and the report's path; warnings raised during the run
are printed once each, after the progress bars.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table
from rich.text import Text

from biaslens.common.env import seconds_from_env
from biaslens.common.inert import escaped_controls
from biaslens.common.numbers import readable, readable_column
from biaslens.framework.estimates import findings, interval_notes, meanings
from biaslens.progress import PlainProgress, RichProgress
from biaslens.secrets import redact

PROGRESS_INTERVAL_ENV = "BIASLENS_PROGRESS_INTERVAL"
"""Seconds between progress lines when the output is not a terminal (default 5)."""


def visible(text: str) -> str:
    """``text`` with control characters shown as escapes (``\\x1b``): a model id, a server's
    message or a file's line may hold terminal escape sequences or bidi overrides, which would
    otherwise act on the user's terminal instead of being read."""
    return escaped_controls(text)


class InertConsole(Console):
    """A console whose printed strings never act on the terminal: control characters (but line
    breaks and tabs) and bidi overrides are shown escaped, whatever model name, path or reply
    they come from (:mod:`biaslens.common.inert`)."""

    def print(self, *objects, **options) -> None:  # noqa: A003 - rich's own name
        shown = (escaped_controls(o, keep="\n\t") if isinstance(o, str) else o for o in objects)
        super().print(*shown, **options)


TEXT_AS_IS = {"markup": False, "emoji": False, "highlight": False}
console = InertConsole(**TEXT_AS_IS, soft_wrap=True)
err_console = InertConsole(stderr=True, **TEXT_AS_IS)
"""Both consoles print text as it is: model names, paths, model outputs and messages that hold
``[``, ``]`` or ``:name:`` are user data, never rich markup or emoji codes. Lines are never
broken by biaslens (a path stays whole; a terminal wraps what it must)."""


def print_error(message: str) -> None:
    """One ``error: …`` line on stderr (the message verbatim, control characters escaped)."""
    shown = visible(redact(message))
    err_console.print(Text.assemble(("error:", "bold red"), " ", shown), soft_wrap=True)


def print_warning(message: str) -> None:
    """One ``warning: …`` line on stderr (verbatim, control characters escaped)."""
    shown = visible(redact(message))
    err_console.print(Text.assemble(("warning:", "yellow"), " ", shown), soft_wrap=True)


def format_value(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        return readable(value)
    if hasattr(value, "item"):
        return format_value(value.item())
    return visible(str(value))


def print_table(title: str, frame, columns: Sequence[str] | None = None) -> None:
    """One rich table of a DataFrame (``columns``: those shown, in order; all when None)."""
    columns = [c for c in (columns or frame.columns) if c in frame.columns]
    plain = not console.is_terminal  # a file or a pipe: the whole table, never cut at 80 columns
    long_values = any(len(str(v)) > 60 for v in frame.to_numpy().ravel())
    out = Table(title=None if plain else title, show_lines=long_values)
    for column in columns:
        out.add_column(str(column))
    cells = []
    for column in columns:
        values = [v.item() if hasattr(v, "item") else v for v in frame[column].tolist()]
        shown = readable_column(values)
        cells.append(
            [s if s is not None else format_value(v) for s, v in zip(shown, values, strict=True)]
        )
    for row in zip(*cells, strict=True):
        out.add_row(*row)
    if plain:
        console.print(visible(title))
        Console(**TEXT_AS_IS, width=10_000).print(out)
    else:
        console.print(out)


def print_meanings(spec, estimates: list[dict], tables=None) -> None:
    """What each headline metric of the run's ``tables`` means, and a warning where an interval
    rests on few units or holds the value that says "no bias" (0)."""
    lines = meanings(spec, tables)
    if not lines:
        return
    console.print("reading the numbers:", style="bold")
    for line in lines:
        console.print(f"  {visible(line)}")
    for note in interval_notes(estimates):
        console.print(f"  note: {note}")


def print_headline(spec, headline, table, title: str) -> None:
    """A headline table as the CLI shows it, each printed column's meaning under it (the
    headline metrics' come under "reading the numbers")."""
    from biaslens.framework.legends import legend_lines, shown_table

    frame, columns = shown_table(headline, table)
    print_table(title, frame, columns)
    for column, meaning in legend_lines(spec, headline, columns):
        if meaning:
            console.print(f"  {visible(column)}: {meaning}")


def print_findings(estimates: list[dict]) -> None:
    """The run's finding first: each value of its first headline table with its interval and
    the verdict that interval allows (:func:`biaslens.framework.estimates.findings`)."""
    for line in findings(estimates):
        console.print(f"finding: {line}", markup=False, highlight=False)


def print_run(result, spec) -> None:
    """The finding and the method's notes first, then the headline tables, what their numbers
    mean, the request counts and where the files are."""
    print_findings(result.summary.get("estimates") or [])
    for note in result.notes:
        console.print(note)
    for headline in spec.headlines:
        if not headline.cli or headline.table not in result.tables:
            continue
        title = f"{headline.title} — {result.model_name}" if spec.needs_model else headline.title
        print_headline(spec, headline, result.tables[headline.table], title)
    print_meanings(spec, result.summary.get("estimates") or [], result.tables)
    if result.cache_stats:
        print_cache_stats(result.cache_stats)
    console.print(f"results: {result.run_dir}")
    for plot in result.plots:
        console.print(f"plot: {plot}")
    if result.report is not None:
        console.print(f"report: {result.report}")


def print_cache_stats(stats: dict) -> None:
    """How many requests a run computed and how many it reused from its request cache."""
    console.print(
        f"requests: {stats.get('computed', 0)} computed, {stats.get('cached', 0)} reused from "
        "the cache"
    )


@contextmanager
def collected_warnings() -> Iterator[None]:
    """Hold warnings back while progress bars draw; print each distinct one once after.

    ``ResourceWarning``s are left out: the garbage collector raises them for objects of
    earlier work (an unclosed file or event loop) whenever it happens to run, not about this
    command's results."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            shown = (w for w in caught if not issubclass(w.category, ResourceWarning))
            for message in dict.fromkeys(str(w.message) for w in shown):
                print_warning(message)


def with_progress(work: Callable):
    """Run ``work(progress)`` under rich progress bars on a terminal, else with a plain
    progress line on stderr every few seconds; warnings printed once afterwards."""
    if not console.is_terminal:
        interval = seconds_from_env(PROGRESS_INTERVAL_ENV, 5.0, allow_zero=True)
        with collected_warnings(), PlainProgress.running(interval) as progress:
            return work(progress)
    with collected_warnings(), RichProgress.open() as progress:
        return work(progress)


def run_and_print(method: str, **options):
    """Run a method through :func:`biaslens.runner.run_method` with progress bars, then print
    its result; returns the :class:`RunResult`."""
    from biaslens.framework.registry import get_method
    from biaslens.runner import run_method

    spec = get_method(method)
    result = with_progress(lambda progress: run_method(method, progress=progress, **options))
    print_run(result, spec)
    return result
