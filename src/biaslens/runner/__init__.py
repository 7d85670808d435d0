"""Running the methods: one run (:func:`run_method`, :mod:`.run`), several models compared
(:func:`run_comparison`, :mod:`.compare`), what a run would ask (:func:`plan_method`,
``--dry-run``, :mod:`.plan`), results added to a finished run (:func:`amend_run`, :mod:`.amend`)
and where a run goes (:mod:`.outputs`).

The runner sits above the report, which it writes after every run; the methods and what they
are written against live below it (:mod:`biaslens.methods`, :mod:`biaslens.framework`).
"""

from biaslens.runner.amend import amend_run
from biaslens.runner.compare import run_comparison
from biaslens.runner.folders import default_output
from biaslens.runner.plan import RunPlan, plan_method
from biaslens.runner.run import loaded_backend_config, run_method, run_settings, write_run_report

__all__ = [
    "RunPlan",
    "amend_run",
    "default_output",
    "loaded_backend_config",
    "plan_method",
    "run_comparison",
    "run_method",
    "run_settings",
    "write_run_report",
]
