"""The method registry: each method registers what it is, once.

Like HELM's ``run_spec_function``, a method module builds a :class:`MethodSpec` — its name, its
settings model, its body, the headline tables that summarise a run, how its run folders are
named and its presets — and passes it to :func:`register`. The runner
(:func:`biaslens.runner.run_method`), the CLI and the report read this registry. The built-in
methods are the modules of :data:`METHOD_MODULES`; a package of the user's own adds one through
a ``biaslens.methods`` entry point (:mod:`biaslens.common.plugins`), with no change here.

The body is the method itself: it builds the dataset, sends requests through ``ctx.lm`` (the
model behind the run's request cache) and returns a :class:`MethodOutput`. Everything around it
(loading the model, the run folder, the cache, provenance, the report) is the runner's job.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslens.common import plugins
from biaslens.errors import BiaslensError
from biaslens.experiments.names import keywords_from_names
from biaslens.experiments.options import Option
from biaslens.experiments.presets import UNSET, ByModel
from biaslens.experiments.settings import MethodSettings, validated
from biaslens.models.base import LM, BackendConfig, ModelKind
from biaslens.progress import NoProgress, Progress
from biaslens.store.run import RunStore
from biaslens.store.schema import OutputFile

METHOD_MODULES = (
    "biaslens.experiments.sib_mgc",
    "biaslens.experiments.sib_detect",
    "biaslens.experiments.sib_toy",
    "biaslens.experiments.lei_eval",
    "biaslens.experiments.lei_train",
    "biaslens.experiments.unqover",
    "biaslens.experiments.cid_audit",
    "biaslens.experiments.cid_sensitivity",
)
"""Modules that register a method (imported on the first registry lookup; none imports torch
at module level)."""


@dataclass(frozen=True)
class Headline:
    """A result table that summarises a run: shown by the CLI after the run and first in the
    report. ``columns``: those the CLI shows (all when empty); ``view``: turns the stored table
    into what the CLI shows (e.g. a pivot); ``cli``: False keeps it out of the terminal;
    ``measures``: the headline metrics among its columns (their meanings, intervals and n go to
    ``summary.json``'s ``estimates``), ``labels``: the columns that say which row is which."""

    table: str
    title: str
    columns: tuple[str, ...] = ()
    view: Callable | None = None
    cli: bool = True
    measures: tuple = ()
    labels: tuple[str, ...] = ()


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
    * ``options``: the command-line options of ``biaslens run NAME`` (generated from them),
      ``description`` its help, ``reads_data`` whether it reads public benchmark data
      (``--data-dir``);
    * ``comparison``: how several models' runs are compared (``--model A B``), if the method
      compares models;
    * ``extra_views(result, values)``: tables (title, frame, columns) the CLI prints after the
      headlines, chosen by the ``display`` options' ``values``.
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
    options: tuple[Option, ...] = ()
    description: str = ""
    reads_data: bool = False
    comparison: Comparison | None = None
    extra_views: Callable[[Any, dict[str, Any]], list] | None = None
    outputs: tuple[OutputFile, ...] = ()
    """The files a run writes and their columns (:mod:`biaslens.store.schema`)."""

    def build_settings(
        self,
        preset: str | None = None,
        kind: ModelKind | None = None,
        details: dict[str, str] | None = None,
        **values,
    ):
        """Validated settings from ``values`` (None means "not given"), on top of ``preset``.

        Preset values that depend on the model (:class:`ByModel`) apply once ``kind`` is known;
        without it they are left out (the runner builds the settings again after loading)."""
        values = {k: v for k, v in values.items() if v is not None}
        values = keywords_from_names(self, values, backend_option_names())
        if preset not in (None, "default"):
            if preset not in self.presets:
                known = ", ".join(["default", *self.presets]) or "default"
                raise BiaslensError(f"{self.name} has no preset {preset!r} (presets: {known})")
            fixed = {k: v for k, v in self.presets[preset].items() if not isinstance(v, ByModel)}
            merged = {**fixed, **values}
            if kind is not None:
                for key, value in self.presets[preset].items():
                    if isinstance(value, ByModel) and key not in values:
                        chosen = value.value(kind, merged, details or {})
                        if chosen is not UNSET:
                            merged[key] = chosen
            values = merged
        if self.make_settings is not None:
            return self.make_settings(**values)
        return validated(self.settings, values)

    def preset_depends_on_model(self, preset: str | None) -> bool:
        """Whether ``preset`` has values that are chosen once the model is loaded."""
        values = self.presets.get(preset or "", {})
        return any(isinstance(v, ByModel) for v in values.values())

    def default_output(self, settings) -> Path:
        if self.run_name is not None:
            return Path("runs") / self.name / self.run_name(settings)
        parts = [safe_name(settings.model)] if self.needs_model else []
        parts += [str(getattr(settings, name)) for name in self.folder_fields]
        return Path("runs") / self.name / "-".join(parts)


_METHODS: dict[str, MethodSpec] = {}


def register(spec: MethodSpec) -> MethodSpec:
    """Add a method to the registry (a second registration of a name is a bug, and so is a
    setting named like a backend option: ``biaslens.run(method, batch_size=16)`` would set the
    backend's batch size and leave the method's setting at its default without a word)."""
    if spec.name in _METHODS and _METHODS[spec.name] is not spec:
        raise ValueError(f"method {spec.name!r} registered twice")
    collisions = sorted(set(spec.settings.model_fields) & backend_option_names())
    if collisions:
        raise ValueError(
            f"method {spec.name!r}: setting(s) {collisions} share their name with backend "
            "options (BackendConfig); rename them"
        )
    _METHODS[spec.name] = spec
    return spec


def backend_option_names() -> set[str]:
    """The names of :class:`BackendConfig`'s fields (keywords that configure the backend)."""
    from dataclasses import fields

    return {f.name for f in fields(BackendConfig)}


def methods() -> dict[str, MethodSpec]:
    """Every registered method by name, in the order of :data:`METHOD_MODULES` (whatever
    order their modules were imported in), then the plug-ins' and those registered elsewhere.
    A plug-in's entry point names a module that registers its method, or a :class:`MethodSpec`
    (registered here)."""
    for module in METHOD_MODULES:
        importlib.import_module(module)
    for loaded in plugins.load(plugins.METHODS).values():
        if isinstance(loaded, MethodSpec) and _METHODS.get(loaded.name) is not loaded:
            register(loaded)

    def place(spec: MethodSpec) -> int:
        module = getattr(spec.body, "__module__", "")
        return METHOD_MODULES.index(module) if module in METHOD_MODULES else len(METHOD_MODULES)

    return {spec.name: spec for spec in sorted(_METHODS.values(), key=place)}


def get_method(name: str) -> MethodSpec:
    known = methods()
    if name not in known:
        broken = plugins.failures(plugins.METHODS).get(name)
        if broken:
            raise BiaslensError(broken)
        raise BiaslensError(f"unknown method {name!r}; methods: {', '.join(known)}")
    return known[name]


MAX_FOLDER_NAME = 120
"""Bytes of a run folder name made from a model name (file systems allow 255 per name)."""


def safe_name(model: str) -> str:
    """A model name or path as one folder name (``org/model`` -> ``org--model``); a name too
    long for a folder keeps its start and gets a hash of the whole (so two long names differ)."""
    import hashlib

    name = str(model).strip("/").replace("/", "--") or "model"
    if len(name.encode()) <= MAX_FOLDER_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    head = name.encode()[: MAX_FOLDER_NAME - 13].decode("utf-8", "ignore")
    return f"{head}-{digest}"
