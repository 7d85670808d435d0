"""Several models through one method, each in its own run folder, then compared (e.g. SIB
Fig. 3(b))."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biaslens.errors import BiaslensError
from biaslens.framework.registry import get_method
from biaslens.models.config import BackendConfig
from biaslens.models.loader import check_loadable
from biaslens.progress import Progress
from biaslens.runner.run import run_settings, write_run_report
from biaslens.store.paths import safe_name


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
    resumable on its own), then compare them with the method's
    :class:`~biaslens.framework.spec.Comparison`. Every model's settings are built, and every
    model checked, before the first one runs."""
    spec = get_method(method)
    if spec.comparison is None:
        raise BiaslensError(f"{method} does not compare models; run one model at a time")
    if len(set(models)) != len(models):
        raise BiaslensError(f"a model is listed twice: {list(models)}")
    settings = {model: spec.build_settings(preset, model=model, **values) for model in models}
    for model in models:
        check_loadable(model, backend)
    root = (
        Path(output)
        if output is not None
        else Path("runs") / method / spec.comparison.folder(settings[models[0]])
    )
    runs = [
        run_settings(
            spec,
            settings[model],
            preset,
            output=root / safe_name(model),
            backend=backend,
            progress=progress,
            report=False,
            cache_dir=cache_dir,
            no_cache=no_cache,
        )
        for model in models
    ]
    comparison = spec.comparison.compare(runs, root)
    comparison.report = write_run_report([r.run_dir for r in runs], root / "report.html")
    return comparison
