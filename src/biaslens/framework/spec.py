"""What a method declares: :class:`MethodSpec` and the parts it is made of.

Like HELM's ``run_spec_function``, a method module builds a :class:`MethodSpec` — its name, its
settings model, its body, the headline tables that summarise a run, how its run folders are
named, its presets and its options — and registers it (:mod:`biaslens.framework.registry`).
The runner (:mod:`biaslens.runner`), the command line, the report and the generated
documentation read nothing else of a method.

The body is the method itself: it builds the dataset, sends requests through ``ctx.lm`` (the
model behind the run's request cache) and returns a :class:`MethodOutput`. Everything around it
(loading the model, the run folder, the cache, provenance, the report) is the runner's job.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslens.common.options import Option
from biaslens.errors import BiaslensError
from biaslens.framework.hooks import AuditRole, LmEvalTask, MethodCommand
from biaslens.framework.names import keywords_from_names
from biaslens.framework.options import options_of
from biaslens.framework.presets import UNSET, ByModel
from biaslens.framework.settings import MethodSettings, validated
from biaslens.models.base import LM, ModelKind
from biaslens.models.checkpoints.registered import resolve_name
from biaslens.models.config import BackendConfig
from biaslens.progress import NoProgress, Progress
from biaslens.store.output_files import OutputFile
from biaslens.store.paths import safe_name
from biaslens.store.run import RunStore


@dataclass(frozen=True)
class Headline:
    """A result table that summarises a run: shown by the CLI after the run and first in the
    report. ``columns``: those the CLI shows (all when empty); ``view``: turns the stored table
    into what the CLI shows (e.g. a pivot); ``report``: into what the report shows (e.g. the
    few most common rows of each group); ``cli``: False keeps it out of the terminal;
    ``measures``: the headline metrics among its columns (their meanings, intervals and n go to
    ``summary.json``'s ``estimates``), ``labels``: the columns that say which row is which;
    ``legend``: what each other printed column means (:mod:`biaslens.framework.legends`)."""

    table: str
    title: str
    columns: tuple[str, ...] = ()
    view: Callable | None = None
    cli: bool = True
    measures: tuple = ()
    labels: tuple[str, ...] = ()
    report: Callable | None = None
    legend: dict[str, str] = field(default_factory=dict)


@dataclass
class RunContext:
    """What a method body gets from the runner.

    ``lm`` answers requests through the run's request cache (None for methods without a
    model); ``uncached_lm`` is the model itself (for work the cache cannot hold, e.g. training);
    ``data_dir`` is where public benchmark data lives (None: ``$BIASLENS_DATA_DIR`` or the
    download cache).
    """

    store: RunStore
    lm: LM | None = None
    uncached_lm: LM | None = None
    backend_config: BackendConfig = field(default_factory=BackendConfig)
    progress: Progress = field(default_factory=NoProgress)
    data_dir: Path | None = None


@dataclass
class MethodOutput:
    """What a method body returns; the runner writes it into the run folder.

    * ``metrics``: the ``metrics`` part of ``summary.json``;
    * ``tables`` (CSV), ``samples`` (Parquet) and ``figures`` (``plots/NAME.png``), by name;
    * ``provenance``: more top-level ``summary.json`` fields (dataset name and hash, …);
    * ``notes``: one-line findings the CLI prints under the headline tables.
    """

    metrics: dict[str, Any]
    tables: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Comparison:
    """Running a method for several models and comparing them (e.g. SIB Fig. 3(b)).

    ``compare(runs, root)`` writes the comparison under ``root`` and returns an object with
    ``root``, ``runs``, ``table`` and ``plots``; ``folder(settings)`` names the root under
    ``runs/<method>/`` (settings of the first model); ``headline`` is the table the CLI shows.
    """

    compare: Callable[..., Any]
    folder: Callable[[Any], str]
    headline: Headline


@dataclass(frozen=True)
class MethodSpec:
    """One method: its name, settings, body and how its runs are shown and named.

    * ``make_settings(**values)``: builds validated settings from user values (default:
      ``settings(**values)``; methods that read input files hash them here);
    * ``prepare(settings, lm)``: checks, before anything is written, that the loaded model can
      serve the method, and returns the settings as recorded (e.g. the default prompt filled
      in);
    * ``folder_fields``: settings whose values follow the model's name in the run folder's name
      under ``runs/<method>/`` (e.g. ``smollm2-exact``); ``run_name(settings)`` names it
      otherwise;
    * ``presets``: named sets of setting values (``paper``: the paper's protocol) that apply
      where the user gave no value;
    * the command-line options of ``biaslens run NAME`` are its settings' flagged fields
      (:attr:`options`); ``display_options``: options that change only what the command prints
      after a run (never a setting); ``description``: the command's help; ``reads_data``:
      whether it reads public benchmark data (``--data-dir``);
    * ``comparison``: how several models' runs are compared (``--model A B``), if the method
      compares models;
    * ``extra_views(result, values)``: tables (title, frame, columns) the CLI prints after the
      headlines, chosen by the ``display`` options' ``values``;
    * ``shortcut``: a top-level command that runs the method without the run-folder options
      (``biaslens cid`` for ``biaslens run cid``);
    * ``lm_eval``: how the method is written as an lm-evaluation-harness task, if it can be
      (``biaslens export lm-eval``); ``inspect_task``: its inspect_ai task (``"module:function"``,
      an ``@task`` that ``inspect eval biaslens/<function>`` runs), if it has one;
      ``commands``: the commands it adds besides ``biaslens run``;
      ``audit``: its part in ``biaslens audit`` (:mod:`biaslens.framework.hooks`).
    """

    name: str
    title: str
    settings: type[MethodSettings]
    body: Callable[[RunContext, Any], MethodOutput]
    headlines: tuple[Headline, ...] = ()
    needs_model: bool = True
    trains_model: bool = False
    """The model is fine-tuned in process (its cost is training, not requests): no --dry-run."""
    make_settings: Callable[..., Any] | None = None
    prepare: Callable[[Any, LM], Any] | None = None
    run_name: Callable[[Any], str] | None = None
    folder_fields: tuple[str, ...] = ()
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    display_options: tuple[Option, ...] = ()
    description: str = ""
    reads_data: bool = False
    comparison: Comparison | None = None
    extra_views: Callable[[Any, dict[str, Any]], list] | None = None
    outputs: tuple[OutputFile, ...] = ()
    """The files a run writes and their columns (:mod:`biaslens.store.output_files`)."""
    shortcut: str | None = None
    lm_eval: LmEvalTask | None = None
    inspect_task: str | None = None
    commands: tuple[MethodCommand, ...] = ()
    audit: AuditRole | None = None
    """How the method takes part in ``biaslens audit`` (None: it does not, in this version)."""

    def meaning(self, file: OutputFile, column: str) -> str:
        """What ``column`` of the run file ``file`` means. A headline metric's meaning is its
        :class:`~biaslens.metrics.meanings.Measure`'s (declared once, beside the code that
        computes it); any other column's is the file's declaration, else the glossary of
        shared names, else that of a headline metric of the same name in another of the
        method's tables."""
        stem = file.name.rsplit(".", 1)[0]
        measures = [(h.table == stem, m) for h in self.headlines for m in h.measures]
        own = next((m for here, m in measures if here and m.column == column), None)
        if own is not None:
            return own.column_meaning()
        declared = file.meaning(column)
        if declared:
            return declared
        other = next((m for _, m in measures if m.column == column), None)
        return other.column_meaning() if other is not None else ""

    @property
    def options(self) -> tuple[Option, ...]:
        """The options of ``biaslens run NAME``: the settings' flagged fields, then the display
        options."""
        return (*options_of(self.settings), *self.display_options)

    def build_settings(
        self,
        preset: str | None = None,
        kind: ModelKind | None = None,
        details: dict[str, str] | None = None,
        **values,
    ):
        """Validated settings from ``values`` (None means "not given"), on top of ``preset``.

        The preset's values that depend on the model (:class:`ByModel`) apply when ``kind``
        (and the model's ``details``) are given; otherwise they are chosen once the model is
        loaded (:meth:`for_model`)."""
        values = {k: v for k, v in values.items() if v is not None}
        values = keywords_from_names(self, values, BackendConfig.keywords)
        preset_values = self._preset(preset)
        merged = {k: v for k, v in preset_values.items() if not isinstance(v, ByModel)}
        merged.update(values)
        if kind is not None:
            merged.update(_chosen(preset_values, kind, merged, details or {}, set(values)))
        if self.make_settings is not None:
            return self.make_settings(**merged)
        return validated(self.settings, merged)

    def for_model(self, settings, lm: LM, preset: str | None = None):
        """The settings as the loaded model decides them: the preset's values that depend on
        the model, for the settings the user left (one validated update); the method's
        ``prepare`` (checks, the scoring mode the model supports); the model's registered
        name. Settings it already prepared for this very model are final: they come back as
        they are (checked once, however many layers pass them on)."""
        prepared_for = getattr(settings, "_prepared_for", None)
        if prepared_for is not None and prepared_for() is lm:
            return settings.model_copy(update={"model": resolve_name(settings.model)})
        given = settings.model_dump()
        chosen = _chosen(
            self._preset(preset),
            lm.kind,
            given,
            dict(lm.identity.details),
            settings.model_fields_set,
        )
        if chosen:
            settings = validated(type(settings), {**_fields_of(settings), **chosen})
        if self.prepare is not None:
            settings = self.prepare(settings, lm)
        settings = settings.model_copy(update={"model": resolve_name(settings.model)})
        if hasattr(settings, "_prepared_for"):
            try:  # a weak reference: a later model at the same address is another model
                settings._prepared_for = weakref.ref(lm)
            except TypeError:  # a model that takes no weak reference is checked each time
                pass
        return settings

    def _preset(self, preset: str | None) -> dict[str, Any]:
        if preset in (None, "default"):
            return {}
        if preset not in self.presets:
            known = ", ".join(["default", *self.presets]) or "default"
            raise BiaslensError(f"{self.name} has no preset {preset!r} (presets: {known})")
        return self.presets[preset]

    def default_output(self, settings) -> Path:
        if self.run_name is not None:
            return Path("runs") / self.name / self.run_name(settings)
        parts = [safe_name(settings.model)] if self.needs_model else []
        parts += [str(getattr(settings, name)) for name in self.folder_fields]
        return Path("runs") / self.name / ("-".join(parts) or "run")


def _chosen(
    preset: dict[str, Any], kind: ModelKind, values: dict, details: dict, given: set[str]
) -> dict[str, Any]:
    """The preset's values that depend on the model, for the settings not in ``given``."""
    chosen = {}
    for key, value in preset.items():
        if isinstance(value, ByModel) and key not in given:
            picked = value.value(kind, values, details)
            if picked is not UNSET:
                chosen[key] = picked
    return chosen


def _fields_of(settings) -> dict[str, Any]:
    """The settings' values as given to a rebuild: the fields that were set, as they are."""
    return {name: getattr(settings, name) for name in settings.model_fields_set}
