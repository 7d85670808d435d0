"""Writing a method's lm-evaluation-harness task folder: its rows (``data.jsonl``), the
``utils.py`` lm-eval imports from the folder, and the task's YAML.

A method that lm-eval can run declares an :class:`~biaslens.framework.hooks.LmEvalTask`; its
``write`` builds the rows as ``biaslens run`` would ask them and the source of its ``utils.py``
(which starts with :data:`LOAD`), and calls :func:`write_task`. ``biaslens export lm-eval``
writes the tasks the user asks for (:mod:`biaslens.interop.lm_eval`).
"""

# ruff: noqa: E501

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from biaslens.common import atomic

LOAD = '''import json
import math
import sys
from pathlib import Path

import datasets


def cannot(metric, why):
    """NaN for a metric these docs cannot give, and one line on stderr saying why."""
    print(f"biaslens: {metric} cannot be computed: {why}", file=sys.stderr)
    return float("nan")


def load_data(**_kwargs):
    """The task's rows (data.jsonl beside this file), wherever the folder lies."""
    rows = [json.loads(line) for line in open(Path(__file__).with_name("data.jsonl"))]
    return {"test": datasets.Dataset.from_list(rows)}
'''
"""The rows' loader every task's utils.py starts with."""


def write_task(
    folder: Path,
    name: str,
    records: Iterable[dict],
    utils: str,
    what: str,
    metrics: Iterable[tuple[str, str, bool]],
) -> Path:
    """Task ``name`` under ``folder``: ``records`` as ``data.jsonl``, ``utils`` as ``utils.py``
    and ``NAME.yaml`` (a ``multiple_choice`` task over each row's ``input`` and ``choices``;
    ``metrics``: (metric, the utils.py function aggregating it, higher is better))."""
    task = folder / name
    task.mkdir(parents=True)
    with open(task / "data.jsonl", "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(atomic.json_safe(record)) + "\n")
    (task / "utils.py").write_text(utils, encoding="utf-8")
    metric_list = "".join(
        f"  - metric: {metric}\n    aggregation: !function utils.{aggregation}\n"
        f"    higher_is_better: {'true' if higher else 'false'}\n"
        for metric, aggregation, higher in metrics
    )
    (task / f"{name}.yaml").write_text(
        f"# biaslens {what}\n"
        f"task: {name}\n"
        "custom_dataset: !function utils.load_data\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: input\n"
        "doc_to_choice: choices\n"
        "doc_to_target: 0\n"
        'target_delimiter: ""\n'
        "process_results: !function utils.process_results\n"
        f"metric_list:\n{metric_list}"
        "metadata:\n  version: 1.0\n",
        encoding="utf-8",
    )
    return task
