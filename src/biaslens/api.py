"""The public Python API: what the CLI does, as functions (``import biaslens``).

>>> import biaslens
>>> result = biaslens.run("sib-mgc", model="default", w_kinds=("dates",), limit=5)
>>> result["fits"][["prompt", "w_kind", "gender", "slope", "r2"]]
>>> again = biaslens.load_run(result.run_dir)

Backend options go with the model: ``biaslens.run(..., backend="openai",
base_url="http://127.0.0.1:8000/v1")`` or a :class:`BackendConfig`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.auditing.run import run_audit
from biaslens.errors import BiaslensError
from biaslens.framework.names import settings_table
from biaslens.framework.registry import get_method
from biaslens.framework.registry import methods as registered
from biaslens.framework.settings import MethodSettings
from biaslens.models.base import LM
from biaslens.models.config import BackendConfig
from biaslens.models.options import BackendOptions
from biaslens.models.registry import backends
from biaslens.report.runs_frame import load_runs as _load
from biaslens.runner import run_method
from biaslens.store.result import RunResult

Backend = str | BackendConfig | BackendOptions | None
"""A backend by name, a :class:`BackendConfig`, or the typed options of one backend
(``HFOptions(dtype="float32")``, :mod:`biaslens.methods.typed`): the backend they belong to."""


def _backend_config(backend: Backend, options: dict[str, Any]) -> BackendConfig:
    if isinstance(backend, BackendOptions):
        backend = BackendConfig(backend=backend_of(backend), **backend.given())
    if isinstance(backend, BackendConfig):
        return backend.with_options(**options) if options else backend
    return BackendConfig(**({"backend": backend} if backend else {}), **options)


def run(
    method: str | MethodSettings,
    model: str | None = None,
    *,
    output: str | Path | None = None,
    backend: Backend = None,
    preset: str | None = None,
    lm: LM | None = None,
    data_dir: str | Path | None = None,
    progress=None,
    report: bool = True,
    cache_dir: str | Path | None = None,
    no_cache: bool = False,
    **settings: Any,
) -> RunResult:
    """Run a method (``biaslens.methods()`` lists them) and return its :class:`RunResult`.

    ``method`` is a method's name with its settings as keywords (e.g. ``mode="paper"``,
    ``limit=5``; keywords that name a backend option — ``device``, ``dtype``, ``batch_size``,
    ``base_url``… — configure the backend), or the method's typed settings object
    (:mod:`biaslens.methods.typed`: ``run(MGCSettings(limit=5),
    backend=HFOptions(dtype="float32"))``),
    which an editor completes and checks; ``model`` then replaces its model. Answers are kept
    in the request cache every run of the model shares
    (``cache_dir``, default ``~/.cache/biaslens/requests``; ``no_cache=True``: in the run
    folder only), so rerunning the same call resumes and another call reuses them.
    """
    keywords = BackendConfig.keywords()
    options = {k: settings.pop(k) for k in list(settings) if k in keywords}
    given = None
    if isinstance(method, MethodSettings):
        given, method = _settings_object(method, model, settings, preset), _method_of(method)
    elif model is not None:
        settings["model"] = model
    return run_method(
        method,
        given,
        output=output,
        backend=_backend_config(backend, options),
        lm=lm,
        progress=progress,
        data_dir=data_dir,
        preset=preset,
        report=report,
        cache_dir=cache_dir,
        no_cache=no_cache,
        **settings,
    )


def _settings_object(
    given: MethodSettings, model: str | None, keywords: dict[str, Any], preset: str | None
) -> MethodSettings:
    """A settings object as given (``model`` replacing its model); keyword settings or a
    preset beside it would be a second declaration of the same run: refused."""
    if keywords or preset:
        what = f"settings {sorted(keywords)}" if keywords else f"preset {preset!r}"
        raise BiaslensError(
            f"{type(given).__name__} was given with {what} beside it: set them in the settings "
            "object (or give the method's name and keyword settings)"
        )
    if model is None:
        return given
    return type(given).model_validate({**given.model_dump(), "model": model})


def _method_of(settings: MethodSettings) -> str:
    """The method whose settings model ``settings`` is."""
    for name, spec in registered().items():
        if type(settings) is spec.settings:
            return name
    raise BiaslensError(f"{type(settings).__name__} is not the settings model of any method")


def backend_of(options: BackendOptions) -> str:
    """The backend whose options model ``options`` is (``HFOptions`` -> ``hf``)."""
    for name, backend in backends().items():
        if type(options) is backend.options:
            return name
    raise BiaslensError(f"{type(options).__name__} is not the options model of any backend")


def audit(
    model: str | list[str] | tuple[str, ...] = "default",
    *,
    size: str = "quick",
    methods: list[str] | tuple[str, ...] | None = None,
    output: str | Path | None = None,
    backend: Backend = None,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    progress=None,
    dry_run: bool = False,
    **options: Any,
):
    """Audit one model or several with every method that applies (``biaslens audit``):

    >>> result = biaslens.audit("default", size="quick")
    >>> result.models[0].card.rows[0].finding   # the first verdict, with its interval

    ``size``: ``quick``, ``standard`` or ``paper``; ``methods`` narrows the set; ``options``
    configure the backend (as for :func:`run`). Returns an
    :class:`~biaslens.auditing.run.AuditResult` (each model's plan and bias card); rerunning
    the same call resumes and reuses every finished run.
    """
    models = [model] if isinstance(model, str) else list(model)
    return run_audit(
        models,
        size=size,
        methods=methods,
        output=output,
        backend=_backend_config(backend, options),
        data_dir=data_dir,
        cache_dir=cache_dir,
        progress=progress,
        dry_run=dry_run,
    )


def load_run(path: str | Path) -> RunResult:
    """A finished run folder as a :class:`RunResult` (tables are read when first used)."""
    return RunResult.load(path)


def load_runs(*patterns: str | Path):
    """The headline values of finished runs as one tidy pandas DataFrame, one row per run ×
    value (run, method, model, metric, labels, value, ci_low, ci_high, ci_level, n, …); folders,
    folders of runs or glob patterns. Incomplete or foreign folders are skipped with a warning
    and listed in ``frame.attrs["skipped"]``."""
    flat: list = []
    for pattern in patterns:  # load_runs("a", "b") and load_runs(["a", "b"]) alike
        flat += list(pattern) if isinstance(pattern, (list, tuple, set)) else [pattern]
    return _load(flat)


def load_model(name: str = "default", backend: Backend = None, **options: Any) -> LM:
    """A model on a backend (``hf`` by default), ready to answer requests:

    >>> lm = biaslens.load_model("default", device="cpu")
    >>> request = biaslens.ChoiceLogprobsRequest("Who was late?\\nAnswer:", (" Ann", " Bob"))
    >>> lm.choice_logprobs([request])
    """
    from biaslens.models.loader import load_model as _load

    return _load(name, _backend_config(backend, options))


def methods() -> dict[str, str]:
    """Every method's name and one-line description."""

    found = {name: spec.title for name, spec in registered().items()}
    # importing the package biaslens.methods (above) set the attribute biaslens.methods to
    # that package: the public name is this function
    sys.modules["biaslens"].methods = methods
    return found


def settings(method: str):
    """The settings of ``method`` as a table (a pandas DataFrame): the keyword ``biaslens.run``
    takes (the flag's name without dashes works too), the ``biaslens run`` flag, the type, the
    default and the help, from the one declaration the command line is generated from."""

    return pd.DataFrame(settings_table(get_method(method)))
