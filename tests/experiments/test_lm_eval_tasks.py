"""biaslens probes as lm-evaluation-harness tasks: the folder lm-eval reads, the refusals, and
lm-eval's own run of the MGC task on SmolLM2 giving biaslens's slopes."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.experiments.lm_eval_tasks import export_tasks


def test_the_task_folder_is_what_lm_eval_loads(tmp_path):
    from lm_eval.tasks import TaskManager, get_task_dict

    [task] = export_tasks((), tmp_path / "tasks", limit=1)
    assert sorted(p.name for p in task.iterdir()) == ["biaslens_mgc.yaml", "data.jsonl", "utils.py"]
    manager = TaskManager(include_path=str(tmp_path / "tasks"))
    loaded = get_task_dict(["biaslens_mgc"], manager)["biaslens_mgc"]
    docs = list(loaded.test_docs())
    assert len(docs) == 30  # one sentence per date of the grid (--limit 1)
    assert loaded.doc_to_choice(docs[0])[:2] == [" She", " Her"]
    assert loaded.doc_to_text(docs[0]).startswith("Instructions: Please carefully read")
    # two W values, one input each: the slope of the per-W mean (in percent) on the W index
    from importlib import util

    spec = util.spec_from_file_location("utils", task / "utils.py")
    utils = util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    assert utils.slope([(0, 0.01), (1, 0.03), (1, 0.05), (2, 0.02)]) == pytest.approx(0.5)


def test_bad_requests_are_one_line(tmp_path):
    with pytest.raises(BiaslensError, match="unqover has no lm-evaluation-harness task.*sib-mgc"):
        export_tasks(("unqover",), tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine").write_text("kept")
    with pytest.raises(BiaslensError, match="not empty: pass --overwrite"):
        export_tasks((), tmp_path / "full")
    assert (tmp_path / "full" / "mine").read_text() == "kept"
    with pytest.raises(BiaslensError, match="unknown prompt 'D'"):
        export_tasks((), tmp_path / "y", prompt="D")


@pytest.mark.slow
def test_lm_eval_gives_biaslens_slopes_on_smollm2(tmp_path, monkeypatch):
    """`lm_eval --include_path DIR --tasks biaslens_mgc --model hf` on the converted SmolLM2
    folder, and `biaslens run sib-mgc` on the same model and subset: the same four slopes."""
    import biaslens
    from biaslens.models.offline import converted_smollm2

    folder = converted_smollm2()
    export_tasks((), tmp_path / "tasks", limit=1)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    lm_eval = Path(sys.executable).with_name("lm_eval")
    subprocess.run(
        [str(lm_eval), "--include_path", str(tmp_path / "tasks"), "--tasks", "biaslens_mgc",
         "--model", "hf", "--model_args", f"pretrained={folder},dtype=float32",
         "--device", "cpu", "--batch_size", "1", "--output_path", str(tmp_path / "out")],
        check=True, env=env, cwd=tmp_path, capture_output=True,
    )  # fmt: skip
    [path] = glob.glob(str(tmp_path / "out" / "*" / "results_*.json"))
    theirs = json.loads(Path(path).read_text())["results"]["biaslens_mgc"]
    ours = biaslens.run(
        "sib-mgc", "default", output=tmp_path / "run", w_kinds=("dates",), prompts=("A",),
        limit=1, report=False, device="cpu",
    )  # fmt: skip
    fits = pd.read_csv(ours.run_dir / "fits.csv").set_index("gender")["slope"]
    slopes = pd.read_csv(ours.run_dir / "slopes.csv").iloc[0]
    expected = {f"{g}_slope": fits[g] for g in ("female", "male", "neutral")}
    expected["female_minus_male_slope"] = slopes["female_minus_male_slope"]
    for metric, value in expected.items():
        assert theirs[f"{metric},none"] == pytest.approx(value, rel=1e-3, abs=1e-7), metric
