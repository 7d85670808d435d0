"""What a method adds besides ``biaslens run NAME``, declared in its
:class:`~biaslens.framework.spec.MethodSpec` so that nothing else names the method.

* :class:`LmEvalTask`: the method as an lm-evaluation-harness task (``biaslens export
  lm-eval``);
* :class:`AuditRole`: how the method takes part in ``biaslens audit`` (its runs at each audit
  size, why it is not an audit step, the known models beside it, a paired comparison);
* :class:`MethodCommand`: a command of its own (``biaslens metrics sib-detect`` scores stored
  outputs, ``biaslens cid-ratings`` adds people's ratings to a finished run), which gets a
  :class:`CommandContext` to print with and to add to a finished run through the runner
  (:class:`Amendment`).

A plug-in method declares these the same way and gets the same commands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslens.common import plugins
from biaslens.common.numbers import finite_or_none, text_or_none
from biaslens.common.options import Argument, Option
from biaslens.framework.questions import Question
from biaslens.metrics.intervals.core import LEVEL


@dataclass(frozen=True)
class LmEvalTask:
    """How a method is written as an lm-evaluation-harness task.

    ``write(folder, limit, data_dir, **options)`` writes one task folder under ``folder``
    (see :mod:`biaslens.framework.lm_eval`) and returns it; given as ``"module:function"``, it
    is imported when a task is written (the task's module may import the method's). ``options``
    are the options of ``biaslens export lm-eval`` it reads besides ``--limit`` and
    ``--data-dir`` (each gets its declared default when not given)."""

    write: Callable[..., Path] | str
    options: tuple[Option, ...] = ()

    def writer(self) -> Callable[..., Path]:
        """The function that writes the task (imported now when named by a string)."""
        return plugins.imported(self.write) if isinstance(self.write, str) else self.write


AUDIT_SIZES = ("quick", "standard", "paper")
"""``biaslens audit --size``: quick (minutes on a laptop CPU for a small model), standard (each
method's defaults), paper (the paper's protocol on its full sets)."""


@dataclass(frozen=True)
class AuditStep:
    """One run of a method in an audit: its settings (keywords of :func:`biaslens.run`), a
    suffix of its name in the audit's folder and card (``religion`` → ``unqover-religion``)
    and a preset."""

    settings: dict[str, Any] = field(default_factory=dict)
    suffix: str = ""
    preset: str | None = None


@dataclass(frozen=True)
class AuditRole:
    """How a method takes part in ``biaslens audit``.

    * ``sizes``: its runs at each audit size (:data:`AUDIT_SIZES`); a size it is missing from
      leaves it out, with ``left_out[size]`` saying why;
    * ``skip``: why the method is never an audit step (it asks no model, it trains one …);
    * ``references(rows, record)``: reference values of known models beside an audited run's
      card rows (dicts of :class:`~biaslens.auditing.card.ReferenceRow`'s fields), from the
      run's record (:class:`~biaslens.store.summary.RunSummary`: its settings, and the
      references it computed itself, e.g. on the contexts it drew);
    * ``paired(run_a, run_b, labels, metric, level)``: the difference of two models' value of
      one headline number, paired over the probe's units, as a dict with ``difference``,
      ``ci_low``, ``ci_high``, ``n`` and ``units`` (None: the method has no paired interval);
    * ``questions``: what the method's audit asks, in its paper's terms, each answered by one
      primary estimate (:class:`~biaslens.framework.questions.Question`); the card judges these
      as one family and shows every other headline number as supporting detail.
    """

    sizes: dict[str, tuple[AuditStep, ...]] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    skip: str | None = None
    references: Callable[[list, Any], list[dict[str, Any]]] | None = None
    paired: Callable[..., dict[str, Any]] | None = None
    questions: tuple[Question, ...] = ()


def reference_row(
    model: str, row, reference: dict[str, Any], protocol: str, gap: str | None
) -> dict[str, Any]:
    """One known model's value of an audited card ``row``'s number (the fields of
    :class:`~biaslens.auditing.card.ReferenceRow`): ``reference`` is its shipped record
    (``value``, ``ci_low``, ``ci_high``, ``source``), ``gap`` why the run's protocol is not the
    reference's (None: it is)."""
    return {
        "model": model,
        "metric": row.metric,
        "labels": dict(row.labels),
        "value": float(reference["value"]),
        "ci_low": finite_or_none(reference["ci_low"]),
        "ci_high": finite_or_none(reference["ci_high"]),
        "protocol": protocol,
        "source": reference["source"],
        "same_protocol": gap is None,
        "why_not_same": gap,
    }


PAIRED_FIELDS = ("difference", "difference_ci_low", "difference_ci_high")
"""A reference record's paired difference with the audited run, and its interval's bounds."""


def paired_fields(reference: dict[str, Any]) -> dict[str, Any]:
    """The paired difference a reference record carries (:data:`PAIRED_FIELDS`, its
    ``difference_note`` and ``paired_over``), as :class:`~biaslens.auditing.card.ReferenceRow`
    fields to add to :func:`reference_row`'s."""
    return {k: finite_or_none(reference.get(k)) for k in PAIRED_FIELDS} | {
        k: text_or_none(reference.get(k)) for k in ("difference_note", "paired_over")
    }


@dataclass(frozen=True)
class Amendment:
    """Results added to a finished run (e.g. people's ratings of a CID audit's continuations):
    ``compute(finished)`` gets the run as it is (:class:`~biaslens.store.result.RunResult`)
    and returns the tables and figures to add (a
    :class:`~biaslens.framework.spec.MethodOutput`); their headline estimates, at
    ``ci_level``, replace those an earlier amendment wrote for the same tables."""

    compute: Callable[[Any], Any]
    ci_level: float = LEVEL


@dataclass(frozen=True)
class Amended:
    """What :class:`Amendment` wrote: the output it computed, the paths of its tables and
    figures by name, and the run's report (None when it could not be written)."""

    output: Any
    paths: dict[str, Path]
    report: Path | None


@dataclass
class CommandContext:
    """What a method's own command gets from the command line: the ``method`` it belongs to,
    where it prints (``table(title, frame, columns)``, ``line(text)``, ``warning(text)``) and
    ``amend_run(run_dir, method, amendment)``, the runner's way of adding results to a finished
    run of the method (:meth:`amend`)."""

    method: str
    table: Callable[[str, Any, Sequence[str] | None], None]
    line: Callable[[str], None]
    warning: Callable[[str], None]
    amend_run: Callable[[Path, str, Amendment], Amended]

    def amend(self, run_dir: Path, amendment: Amendment) -> Amended:
        """Add ``amendment`` to the finished run of this method in ``run_dir``."""
        return self.amend_run(run_dir, self.method, amendment)


@dataclass(frozen=True)
class MethodCommand:
    """A command a method adds: ``name`` under the command group ``group`` (``"metrics"``) or
    at the top level (None), taking ``params`` and calling ``run(ctx, **values)`` with a
    :class:`CommandContext`; its help is ``run``'s docstring."""

    name: str
    run: Callable[..., None]
    params: tuple[Option | Argument, ...] = field(default=())
    group: str | None = None
