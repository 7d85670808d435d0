"""One runner for every method: load the model, open the run folder, run, record, report.

:func:`run_method` owns what every method shares, so that the methods themselves
(:mod:`biaslens.experiments`) only build data, ask for answers and compute metrics:

1. settings validated (a preset applied where the user gave no value);
2. the model loaded on its backend and checked against what the method needs (``prepare``),
   all before anything is written: a run that fails on its inputs leaves no folder;
3. the run folder (``RunStore``): compatible with an earlier run of the same settings, locked
   against a second process, created on the first write;
4. the method's body, answering requests through the run's request cache (resumable);
5. tables, samples and figures written, ``summary.json`` with the metrics and provenance (model
   identity, backend settings, request counts, dataset hashes, versions), the HTML report;
6. one :class:`RunResult`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biaslens.errors import BiaslensError
from biaslens.experiments.estimates import collect as collect_estimates
from biaslens.experiments.registry import RunContext, get_method, safe_name
from biaslens.metrics.intervals import LEVEL
from biaslens.models.base import LM, BackendConfig
from biaslens.progress import NoProgress, Progress
from biaslens.store.cache import CachedLM, model_cache_file, shared_cache_dir
from biaslens.store.paths import ANOTHER_OUTPUT
from biaslens.store.result import LazyTables, RunResult
from biaslens.store.run import RunStore, read_config

if TYPE_CHECKING:
    import pandas as pd


def run_method(
    method: str,
    settings: Any = None,
    *,
    output: Path | str | None = None,
    backend: BackendConfig | None = None,
    lm: LM | None = None,
    progress: Progress | None = None,
    data_dir: Path | str | None = None,
    preset: str | None = None,
    report: bool = True,
    cache_dir: Path | str | None = None,
    no_cache: bool = False,
    **values: Any,
) -> RunResult:
    """Run ``method`` and return its result; rerunning the same call resumes from the request
    cache.

    ``settings`` is the method's settings object, or give its fields as keyword ``values``
    (with ``preset``). ``output`` defaults to ``runs/<method>/<name>``. ``backend`` chooses and
    configures the backend; ``lm`` passes an already loaded model instead. Answers are kept in
    the request cache shared by every run of the model (``cache_dir``; default
    ``~/.cache/biaslens/requests``), or, with ``no_cache``, in the run folder only.
    """
    from biaslens.models.registry import load_model, resolve_name

    spec = get_method(method)
    given = values.pop("model", None) if lm is not None else None
    if given is not None and resolve_name(given) != resolve_name(lm.identity.name):
        raise BiaslensError(
            f"model {given!r} was named beside a loaded model ({lm.identity.name!r}); give "
            "one of them"
        )
    from_values = settings is None
    if from_values:
        settings = spec.build_settings(preset, **values)
    elif values or preset:
        raise BiaslensError("give the settings object or keyword settings, not both")
    elif not isinstance(settings, spec.settings):
        raise BiaslensError(
            f"{method} takes {spec.settings.__name__}, not {type(settings).__name__}"
        )
    if lm is not None:
        # the run records the model that answers, not the settings' default name
        settings = settings.model_copy(update={"model": lm.identity.name})
        backend = loaded_backend_config(lm, backend)
    backend = backend or BackendConfig()
    progress = progress or NoProgress()
    if output is not None:
        _check_output_method(Path(output), spec.name)
    base = None
    try:
        if spec.needs_model:
            base = lm if lm is not None else load_model(settings.model, backend)
            settings = settings_for_model(spec, settings, base, preset, values, from_values)
        runtime = backend.describe() if spec.needs_model else {}
        model = base.identity.recorded() if base is not None else None
        if output is None:
            output = default_output(spec, settings, model)
        output = Path(output)
        cache_file = (
            model_cache_file(shared_cache_dir(cache_dir), base.identity)
            if base is not None and not no_cache
            else None
        )
        with RunStore(output, spec.name, settings.recorded(), runtime, model, cache_file) as store:
            cached = (
                CachedLM(base, lambda: store.cache, max_new=backend.max_requests)
                if base is not None
                else None
            )
            context = RunContext(
                store=store,
                lm=cached,
                uncached_lm=base,
                backend_config=backend,
                progress=progress,
                data_dir=Path(data_dir) if data_dir is not None else None,
            )
            out = spec.body(context, settings)
            out.tables = {name: store.labelled(table) for name, table in out.tables.items()}
            for name, table in out.tables.items():
                store.write_table(name, table)
            for name, table in out.samples.items():
                if not isinstance(table, Path):  # a Path: streamed into the run folder already
                    store.write_samples(table, name)
            plots = [_write_figure(store, name, figure) for name, figure in out.figures.items()]
            provenance: dict[str, Any] = {}
            if base is not None:
                provenance = {
                    "model": base.identity.describe(),
                    "backend": backend.describe(),
                    "requests": dict(cached.stats),
                    "request_cache": str(cache_file) if cache_file else "run folder",
                }
            random_tensors = dict(base.identity.details).get("random_tensors") if base else None
            if random_tensors:
                out.notes.insert(
                    0,
                    f"the model has {random_tensors} random tensor(s) (--allow-missing-weights): "
                    "its numbers are not the checkpoint's",
                )
            summary = store.write_summary(
                out.metrics,
                **{"model": None, "dataset": None, **provenance, **out.provenance},
                estimates=collect_estimates(spec, out.tables, getattr(settings, "ci_level", LEVEL)),
                notes=list(out.notes),
            )
    finally:
        if base is not None and lm is None:  # a model the run loaded, the run releases
            base.close()
    result = RunResult(
        run_dir=output,
        method=spec.name,
        settings=settings.recorded(),
        summary=summary,
        tables=dict(out.tables),
        sample_tables=LazyTables.of(out.samples),
        plots=plots,
        cache_stats=dict(cached.stats) if cached is not None else {},
        notes=list(out.notes),
    )
    if report:
        result.report = write_run_report([output])
    return result


def default_output(spec, settings, model: dict[str, Any] | None) -> Path:
    """The run folder when none is given: ``runs/METHOD/NAME``, or, when that folder holds a run
    of other settings (another ``--limit``), another commit of the model or the model read
    another way (``--chat``, another dtype), a sibling named with a short hash of these settings
    and model, so that a default run never collides
    with an earlier one (an explicit ``--output`` keeps the refusal)."""
    import hashlib
    import json

    from biaslens.errors import ConfigMismatchError

    folder = spec.default_output(settings)
    try:
        RunStore.ensure_compatible(folder, spec.name, settings.recorded(), model)
        return folder
    except ConfigMismatchError as mismatch:
        commit = (model or {}).get("commit_sha")
        numerics = (model or {}).get("numerics")
        text = json.dumps([settings.recorded(), commit, numerics], sort_keys=True, default=str)
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        sibling = folder.with_name(f"{folder.name}-{digest}")
        warnings.warn(
            f"{folder} holds a run of other settings ({mismatch.reason}); this run is in {sibling}",
            stacklevel=3,
        )
        return sibling


def settings_for_model(
    spec, settings, lm: LM, preset: str | None, values: dict, from_values: bool = True
):
    """The settings as the model decides them: a preset that depends on the model's kind
    (settings built from ``values`` only), the method's ``prepare`` (checks, the scoring mode the
    model supports), and the model's registered name."""
    from biaslens.models.registry import resolve_name

    if from_values and spec.preset_depends_on_model(preset):
        settings = spec.build_settings(
            preset, kind=lm.kind, details=dict(lm.identity.details),
            **{**values, "model": settings.model},
        )  # fmt: skip
    if spec.prepare is not None:
        settings = spec.prepare(settings, lm)
    return settings.model_copy(update={"model": resolve_name(settings.model)})


@dataclass
class RunPlan:
    """What a run would ask a model (``--dry-run``): requests and estimated tokens per request
    type, how the tokens were counted, and any note (a method that stopped on placeholders)."""

    model: str
    backend: str
    table: pd.DataFrame
    counted_by: str
    notes: list[str]


def plan_method(
    method: str,
    *,
    backend: BackendConfig | None = None,
    data_dir: Path | str | None = None,
    preset: str | None = None,
    progress: Progress | None = None,
    **values: Any,
) -> RunPlan:
    """Count what ``run_method`` with the same arguments would ask the model, without loading
    it or calling a server: the method runs on placeholder answers (:mod:`biaslens.models.
    planning`) in a scratch folder that is removed afterwards."""
    import tempfile

    import pandas as pd

    from biaslens.models.planning import planning_model

    spec = get_method(method)
    if not spec.needs_model:
        raise BiaslensError(f"{method} asks no model anything: there is nothing to plan")
    if spec.trains_model:
        raise BiaslensError(
            f"{method} fine-tunes the model in process: it sends no requests to count"
        )
    for unused in ("output", "cache_dir", "no_cache"):  # nothing is written or asked
        values.pop(unused, None)
    backend = backend or BackendConfig()
    settings = spec.build_settings(preset, **values)
    planner = planning_model(settings.model, backend)
    settings = settings_for_model(spec, settings, planner, preset, values)
    notes = []
    with tempfile.TemporaryDirectory(prefix="biaslens-dry-run-") as scratch:
        with RunStore(Path(scratch) / "run", spec.name, settings.recorded(), {}) as store:
            context = RunContext(
                store=store,
                lm=planner,
                backend_config=backend,
                progress=progress or NoProgress(),
                data_dir=Path(data_dir) if data_dir is not None else None,
            )
            try:
                spec.body(context, settings)
            except Exception as error:  # placeholders are not answers: later stages may balk
                if not planner.requests:
                    raise
                notes.append(
                    "the method stopped on the placeholder answers after the requests above "
                    f"({type(error).__name__}: {str(error)[:100]}); any request it would send "
                    "after that point is not counted"
                )
    rows = [
        {
            "request_type": name,
            "requests": count,
            "prompt_tokens": planner.prompt_tokens[name],
            "completion_tokens_at_most": planner.completion_tokens[name],
        }
        for name, count in planner.requests.items()
    ]
    table = pd.DataFrame(rows, columns=["request_type", "requests", "prompt_tokens",
                                        "completion_tokens_at_most"])  # fmt: skip
    if len(table) > 1:
        total = table.drop(columns="request_type").sum()
        table.loc[len(table)] = {"request_type": "total", **total.to_dict()}
    return RunPlan(settings.model, backend.backend, table, planner.counted_by, notes)


def loaded_backend_config(lm: LM, given: BackendConfig | None) -> BackendConfig:
    """The backend settings of a model passed in loaded: its own (every biaslens backend keeps
    them as ``config``), else the backend named by its identity. Settings given beside a loaded
    model that say otherwise are refused: they would be recorded but not used."""
    own = getattr(lm, "config", None)
    if not isinstance(own, BackendConfig):
        from biaslens.models.registry import backends

        named = lm.identity.backend
        own = BackendConfig(backend=named) if named in backends() else BackendConfig()
    if given is not None and given != BackendConfig() and given != own:
        raise BiaslensError(
            "backend options were given beside a loaded model; the model runs with the options "
            "it was loaded with: pass them to load_model instead"
        )
    return own


def _write_figure(store: RunStore, name: str, figure) -> Path:
    import matplotlib.pyplot as plt

    try:
        return store.write_plot(name, figure)
    finally:
        plt.close(figure)


def _check_output_method(output: Path, method: str) -> None:
    """Refuse, before the model loads, an output folder that holds another method's run."""
    if (output / "config.yaml").is_file():
        existing = read_config(output)["method"]
        if existing != method:
            raise BiaslensError(
                f"output directory {output} holds a {existing} run, not {method}; {ANOTHER_OUTPUT}"
            )


def write_run_report(run_dirs: Sequence[Path], output: Path | None = None) -> Path | None:
    """The HTML report of finished run(s); a report problem is a warning, never a failed run."""
    from biaslens.report.html import write_report

    try:
        return write_report(list(run_dirs), output)
    except BiaslensError as error:
        warnings.warn(f"no report: {error}", stacklevel=2)
        return None


def run_comparison(
    method: str,
    models: Sequence[str],
    *,
    output: Path | str | None = None,
    backend: BackendConfig | None = None,
    progress: Progress | None = None,
    preset: str | None = None,
    cache_dir: Path | str | None = None,
    no_cache: bool = False,
    **values: Any,
):
    """Run ``method`` for several models, each in its own run folder under ``output`` (each
    resumable on its own), then compare them with the method's :class:`Comparison` (e.g. SIB
    Fig. 3(b))."""
    spec = get_method(method)
    if spec.comparison is None:
        raise BiaslensError(f"{method} does not compare models; run one model at a time")
    if len(set(models)) != len(models):
        raise BiaslensError(f"a model is listed twice: {list(models)}")
    first = spec.build_settings(preset, model=models[0], **values)
    root = (
        Path(output)
        if output is not None
        else Path("runs") / method / spec.comparison.folder(first)
    )
    # every model's settings and folder are checked before the first one runs
    from biaslens.models.registry import check_loadable

    for model in models:
        spec.build_settings(preset, model=model, **values)
        check_loadable(model, backend)
    runs = [
        run_method(
            method,
            output=root / safe_name(model),
            backend=backend,
            progress=progress,
            report=False,
            preset=preset,
            cache_dir=cache_dir,
            no_cache=no_cache,
            model=model,
            **values,
        )
        for model in models
    ]
    comparison = spec.comparison.compare(runs, root)
    comparison.report = write_run_report([r.run_dir for r in runs], root / "report.html")
    return comparison
