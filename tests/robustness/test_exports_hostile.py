"""Exports that must not lose the old result or break in a peer's hands: ``export lm-eval
--overwrite`` that fails keeps the old export; lm-eval's ``--limit`` (the first N docs) spans
the W values the slope needs; an aggregation that cannot compute says why in one line."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from importlib import util
from pathlib import Path

import pytest

from biaslens.errors import BiaslensError
from biaslens.interop.lm_eval.tasks import export_tasks


def utils_of(task: Path):
    spec = util.spec_from_file_location(f"utils_{task.name}", task / "utils.py")
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_failed_overwrite_keeps_the_old_export(tmp_path):
    folder = tmp_path / "tasks"
    [old] = export_tasks(("sib-mgc",), folder, limit=1)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    empty = tmp_path / "no-data"
    empty.mkdir()
    with pytest.raises(BiaslensError):  # no LEI data there: the new export fails half-way
        export_tasks(("sib-mgc", "lei-eval"), folder, limit=1, overwrite=True, data_dir=empty)
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no-data", "tasks"]  # no staging left


def test_every_prefix_of_the_mgc_docs_spans_the_w_values(tmp_path):
    [task] = export_tasks(("sib-mgc",), tmp_path / "tasks", limit=3)
    docs = [json.loads(line) for line in (task / "data.jsonl").read_text().splitlines()]
    assert len(docs) == 90 and sorted({d["w_index"] for d in docs}) == list(range(30))
    assert sorted({d["w_index"] for d in docs[:2]}) == [0, 29]  # the ends first
    for n in range(2, len(docs) + 1):
        spanned = {d["w_index"] for d in docs[:n]}
        assert len(spanned) == min(n, 30)
    assert sorted(json.dumps(d, sort_keys=True) for d in docs[:30]) == sorted(
        json.dumps(d, sort_keys=True) for d in docs if d["id"] in {x["id"] for x in docs[:30]}
    )


def test_aggregations_that_cannot_compute_say_why(tmp_path, capsys):
    [mgc, detect] = export_tasks(("sib-mgc", "sib-detect"), tmp_path / "tasks", limit=1,
                                 data_dir=None)  # fmt: skip
    slope = utils_of(mgc).slope([(3, 0.1), (3, 0.2)])
    assert slope != slope  # NaN
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "slope cannot be computed" in said[0] and "1 W value" in said[0]
    assert utils_of(mgc).slope([(0, 0.01), (2, 0.03)]) == pytest.approx(1.0)
    assert utils_of(detect).tpr([]) != utils_of(detect).tpr([])
    assert "TPR cannot be computed" in capsys.readouterr().err


@pytest.mark.slow
def test_lm_eval_with_a_small_limit_gives_finite_slopes(tiny_models, tmp_path):
    """``lm_eval --tasks biaslens_mgc --limit 5``, as lm-eval's users try a task first (the
    real command on a tiny causal model): the slopes are numbers."""
    export_tasks(("sib-mgc",), tmp_path / "tasks", limit=2)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("lm_eval")), "--include_path", str(tmp_path / "tasks"),
         "--tasks", "biaslens_mgc", "--model", "hf", "--limit", "5", "--model_args",
         f"pretrained={tiny_models['llama']},dtype=float32", "--device", "cpu",
         "--batch_size", "1", "--output_path", str(tmp_path / "out")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [path] = glob.glob(str(tmp_path / "out" / "*" / "results_*.json"))
    results = json.loads(Path(path).read_text())["results"]["biaslens_mgc"]
    slopes = [v for k, v in results.items() if k.endswith("_slope,none")]
    assert len(slopes) == 4 and all(isinstance(v, float) and v == v for v in slopes), results
