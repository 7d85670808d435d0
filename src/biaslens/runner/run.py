"""One runner for every method: load the model, open the run folder, run, record, report.

:func:`run_method` owns what every method shares, so that the methods themselves
(:mod:`biaslens.methods`) only build data, ask for answers and compute metrics:

1. settings built once, validated (a preset applied where the user gave no value);
2. the model loaded on its backend and the settings completed for it (the preset's values
   that depend on the model, the method's ``prepare``), all before anything is written: a
   run that fails on its inputs leaves no folder;
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
from pathlib import Path
from typing import Any

from biaslens.errors import BiaslensError
from biaslens.framework.estimates import collect as collect_estimates
from biaslens.framework.registry import get_method
from biaslens.framework.spec import MethodSpec, RunContext
from biaslens.metrics.intervals import LEVEL
from biaslens.models.base import LM
from biaslens.models.checkpoints.registered import resolve_name
from biaslens.models.config import BackendConfig
from biaslens.progress import NoProgress, Progress, note
from biaslens.report.html import write_report
from biaslens.runner.folders import check_output_method, default_output
from biaslens.store.cache import CachedLM, model_cache_file, shared_cache_dir
from biaslens.store.result import LazyTables, RunResult
from biaslens.store.run import RunStore


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
    spec = get_method(method)
    given = values.pop("model", None) if lm is not None else None
    if given is not None and resolve_name(given) != resolve_name(lm.identity.name):
        raise BiaslensError(
            f"model {given!r} was named beside a loaded model ({lm.identity.name!r}); give "
            "one of them"
        )
    if settings is None:
        settings = spec.build_settings(preset, **values)
    elif values or preset:
        raise BiaslensError("give the settings object or keyword settings, not both")
    elif not isinstance(settings, spec.settings):
        raise BiaslensError(
            f"{method} takes {spec.settings.__name__}, not {type(settings).__name__}"
        )
    return run_settings(
        spec,
        settings,
        preset,
        output=output,
        backend=backend,
        lm=lm,
        progress=progress,
        data_dir=data_dir,
        report=report,
        cache_dir=cache_dir,
        no_cache=no_cache,
    )


def run_settings(
    spec: MethodSpec,
    settings: Any,
    preset: str | None = None,
    *,
    output: Path | str | None = None,
    backend: BackendConfig | None = None,
    lm: LM | None = None,
    progress: Progress | None = None,
    data_dir: Path | str | None = None,
    report: bool = True,
    cache_dir: Path | str | None = None,
    no_cache: bool = False,
) -> RunResult:
    """Run ``spec`` on settings already built (from ``preset``, whose values that depend on
    the model are chosen once it is loaded); see :func:`run_method`."""
    if lm is not None:
        # the run records the model that answers, not the settings' default name
        settings = settings.model_copy(update={"model": lm.identity.name})
        backend = loaded_backend_config(lm, backend)
    if spec.needs_model:  # a method without a model has no backend (and imports no plug-in)
        backend = backend or BackendConfig()
    progress = progress or NoProgress()
    if output is not None:
        check_output_method(Path(output), spec.name)
    if data_dir is not None and not Path(data_dir).is_dir():  # before the model loads
        raise BiaslensError(
            f"--data-dir {data_dir}: no such folder; `biaslens datasets download NAME --data-dir "
            f"{data_dir}` fetches a dataset there (winogender, unqover, lei), or leave --data-dir "
            "out to use the download cache"
        )
    base = None
    try:
        if spec.needs_model:
            base = lm if lm is not None else _load(settings.model, backend)
            settings = spec.for_model(settings, base, preset)
        model = base.identity.recorded() if base is not None else None
        if output is None:
            output, why = default_output(spec, settings, model)
            note(progress, f"run folder: {output}" + (f" ({why})" if why else ""))
        output = Path(output)
        cache_file = (
            model_cache_file(shared_cache_dir(cache_dir), base.identity)
            if base is not None and not no_cache
            else None
        )
        runtime = backend.describe() if spec.needs_model else {}
        with RunStore(output, spec.name, settings.recorded(), runtime, model, cache_file) as store:
            cached = (
                CachedLM(base, lambda: store.cache, max_new=backend.options.max_requests)
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
            plots, summary = _write_outputs(spec, store, out, settings, base, backend, cached)
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


def _load(name: str, backend: BackendConfig) -> LM:
    from biaslens.models import loader  # looked up when called: tests stand in for it

    return loader.load_model(name, backend)


def _write_outputs(spec, store: RunStore, out, settings, base, backend, cached):
    """Tables, samples, figures and ``summary.json`` of a finished body; the plots' paths and
    the summary."""
    import matplotlib.pyplot as plt

    try:
        out.tables = {name: store.labelled(table) for name, table in out.tables.items()}
        for name, table in out.tables.items():
            store.write_table(name, table)
        for name, table in out.samples.items():
            if not isinstance(table, Path):  # a Path: streamed into the run folder already
                store.write_samples(table, name)
        plots = [write_figure(store, name, figure) for name, figure in out.figures.items()]
    finally:  # a run that cannot be written leaves no figure open in the process
        for figure in out.figures.values():
            plt.close(figure)
    provenance: dict[str, Any] = {}
    if base is not None:
        provenance = {
            "model": base.identity.describe(),
            "backend": backend.describe(),
            "requests": dict(cached.stats),
            "request_cache": str(store.cache_file) if store.cache_file else "run folder",
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
    return plots, summary


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


def write_figure(store: RunStore, name: str, figure) -> Path:
    import matplotlib.pyplot as plt

    try:
        return store.write_plot(name, figure)
    finally:
        plt.close(figure)


def write_run_report(run_dirs: Sequence[Path], output: Path | None = None) -> Path | None:
    """The HTML report of finished run(s); a report problem is a warning, never a failed run."""
    try:
        return write_report(list(run_dirs), output)
    except BiaslensError as error:
        warnings.warn(f"no report: {error}", stacklevel=2)
        return None
