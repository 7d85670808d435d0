"""Adding results to a finished run (:func:`amend_run`): a later stage of a method, such as
people's ratings of a CID audit's continuations, written into the run folder the way a run's
own outputs are, so that no method writes a run folder itself."""

from __future__ import annotations

from pathlib import Path

from biaslens.errors import BiaslensError
from biaslens.framework.estimates import collect as collect_estimates
from biaslens.framework.hooks import Amended, Amendment
from biaslens.framework.registry import get_method
from biaslens.runner.run import write_figure, write_run_report
from biaslens.store.result import RunResult
from biaslens.store.run import CONFIG_FILE, RunStore, read_config


def amend_run(run_dir: Path | str, method: str, amendment: Amendment) -> Amended:
    """Compute ``amendment`` from the finished run of ``method`` in ``run_dir`` and
    write its tables and figures there; the summary names them, and their headline estimates
    replace those of an earlier amendment of the same tables. The run's report is rewritten.
    Until the summary is written back the run reads as incomplete, as during any write."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise BiaslensError(f"{run_dir}: not a biaslens run directory (no {CONFIG_FILE})")
    config = read_config(run_dir)
    if config.get("method") != method:
        raise BiaslensError(f"{run_dir} holds a {config.get('method')} run, not a {method} run")
    finished = RunResult.load(run_dir)  # a finished run, its outputs as it wrote them
    output = amendment.compute(finished)
    spec = get_method(method)
    store = RunStore(
        run_dir, method, config["settings"], config.get("runtime"), config.get("model")
    )
    paths: dict[str, Path] = {}
    with store:  # the run's outputs change together: the summary names the new ones
        output.tables = {name: store.labelled(table) for name, table in output.tables.items()}
        for name, table in output.tables.items():
            paths[name] = store.write_table(name, table)
        for name, figure in output.figures.items():
            paths[f"plots/{name}"] = write_figure(store, name, figure)
        kept = [
            e
            for e in finished.summary.get("estimates") or []
            if e.get("table") not in output.tables
        ]
        estimates = collect_estimates(spec, output.tables, amendment.ci_level)
        store.extend_summary({**finished.summary, "estimates": [*kept, *estimates]})
    return Amended(output, paths, write_run_report([run_dir]))
