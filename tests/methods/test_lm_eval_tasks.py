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
from biaslens.interop.lm_eval.tasks import export_tasks


def lm_eval_results(tmp_path, model: Path, task: str) -> dict:
    """`lm_eval --include_path tasks --tasks TASK --model hf` (the real command, offline) on
    ``model``: the task's results."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    subprocess.run(
        [str(Path(sys.executable).with_name("lm_eval")), "--include_path", str(tmp_path / "tasks"),
         "--tasks", task, "--model", "hf", "--model_args", f"pretrained={model},dtype=float32",
         "--device", "cpu", "--batch_size", "16", "--output_path", str(tmp_path / "out")],
        check=True, env=env, cwd=tmp_path, capture_output=True,
    )  # fmt: skip
    [path] = glob.glob(str(tmp_path / "out" / "*" / "results_*.json"))
    return json.loads(Path(path).read_text())["results"][task]


def test_the_task_folder_is_what_lm_eval_loads(tmp_path):
    from lm_eval.tasks import TaskManager, get_task_dict

    [task] = export_tasks(("sib-mgc",), tmp_path / "tasks", limit=1)
    assert sorted(p.name for p in task.iterdir()) == ["biaslens_mgc.yaml", "data.jsonl", "utils.py"]
    manager = TaskManager(include_path=str(tmp_path / "tasks"))
    loaded = get_task_dict(["biaslens_mgc"], manager)["biaslens_mgc"]
    docs = list(loaded.test_docs())
    assert len(docs) == 30  # one sentence per date of the grid (--limit 1)
    assert loaded.doc_to_choice(docs[0])[:4] == [" She", "She", " Her", "Her"]
    assert loaded.doc_to_text(docs[0]).startswith("Instructions: Please carefully read")
    # two W values, one input each: the slope of the per-W mean (in percent) on the W index
    from importlib import util

    spec = util.spec_from_file_location("utils", task / "utils.py")
    utils = util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    assert utils.slope([(0, 0.01), (1, 0.03), (1, 0.05), (2, 0.02)]) == pytest.approx(0.5)


def test_the_lei_task_holds_both_questions_of_every_context(tmp_path):
    from tests.conftest import DATA

    [task] = export_tasks(("lei-eval",), tmp_path / "tasks", limit=2, data_dir=DATA)
    rows = [json.loads(line) for line in (task / "data.jsonl").read_text().splitlines()]
    assert {r["negated"] for r in rows} == {False, True}
    assert {r["set"] for r in rows} == {"none", "ethical", "adversarial", "irrelevant"}
    first = rows[0]
    a, b = first["first"].lower(), first["second"].lower()
    assert first["choices"] == [" " + a, a, " " + b, b]  # each subject in both spellings
    assert first["input"].endswith("\nanswer:")  # the UnifiedQA layout of a causal model
    yaml = (task / f"{task.name}.yaml").read_text()
    assert "metric: mu_adversarial" in yaml and "aggregation: !function utils.theta4" in yaml


def test_bad_requests_are_one_line(tmp_path):
    with pytest.raises(
        BiaslensError,
        match="unqover has no lm-evaluation-harness task.*lei-eval, sib-detect, sib-mgc",
    ):
        export_tasks(("unqover",), tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine").write_text("kept")
    with pytest.raises(BiaslensError, match="not empty: pass --overwrite"):
        export_tasks(("sib-mgc",), tmp_path / "full")
    assert (tmp_path / "full" / "mine").read_text() == "kept"
    with pytest.raises(BiaslensError, match="unknown prompt 'D'"):
        export_tasks(("sib-mgc",), tmp_path / "y", prompt="D")


@pytest.mark.slow
def test_lm_eval_gives_biaslens_slopes_on_smollm2(tmp_path, monkeypatch):
    """`lm_eval --include_path DIR --tasks biaslens_mgc --model hf` on the converted SmolLM2
    folder, and `biaslens run sib-mgc` on the same model and subset: the same four slopes."""
    import biaslens
    from biaslens.models.checkpoints.packaged import converted_smollm2

    folder = converted_smollm2()
    export_tasks(("sib-mgc",), tmp_path / "tasks", limit=1)
    theirs = lm_eval_results(tmp_path, folder, "biaslens_mgc")
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


def test_lm_eval_gives_biaslens_lei_mu(tiny_models, tmp_path):
    """The zero-shot LEI task: μ, η and θ4 of every set equal `biaslens run lei-eval`'s on the
    same model and contexts (generative choice scoring; the tiny Llama, whose random weights
    put unequal mass on the two subjects, so every maximum has something to find)."""
    import biaslens
    from tests.conftest import DATA

    folder = tiny_models["llama"]
    [task] = export_tasks(("lei-eval",), tmp_path / "tasks", limit=1, data_dir=DATA)
    theirs = lm_eval_results(tmp_path, folder, task.name)
    ours = biaslens.run(
        "lei-eval", str(folder), output=tmp_path / "run", domain="religion", limit=1, bootstrap=0,
        data_dir=DATA, report=False, device="cpu",
    )  # fmt: skip
    table = pd.read_csv(ours.run_dir / "lei_mu.csv").set_index("set")
    assert set(table.index) == {"none", "ethical", "adversarial", "irrelevant"}
    assert (table["mu"] > 0).all()  # the model prefers some subject in every set
    for set_name, row in table.iterrows():
        for metric in ("mu", "eta", "theta4"):
            got = theirs[f"{metric}_{set_name},none"]
            assert got == pytest.approx(row[metric], rel=1e-3, abs=1e-6), (set_name, metric)


def test_the_detector_task_rates_by_hand(tmp_path):
    """Two sentences per class: shares 50→60 (10 pp: flagged) and 50→50.2 (0.2 pp: cleared)."""
    from importlib import util

    from tests.conftest import DATA

    [task] = export_tasks(("sib-detect",), tmp_path / "tasks", limit=1, data_dir=DATA)
    rows = [json.loads(line) for line in (task / "data.jsonl").read_text().splitlines()]
    assert {(r["end"], r["date"]) for r in rows} == {("earliest", 1901), ("latest", 2016)}
    assert rows[0]["input"].startswith("Instructions:") and "In 1901, " in rows[0]["input"]
    spec = util.spec_from_file_location("utils", task / "utils.py")
    utils = util.module_from_spec(spec)
    spec.loader.exec_module(utils)

    def item(sentence, end, well, female):
        return (sentence, end, well, 0.5, {"female": female, "male": 1 - female, "neutral": 0})

    items = [item("a", "earliest", False, 0.5), item("a", "latest", False, 0.6),
             item("b", "earliest", False, 0.5), item("b", "latest", False, 0.502),
             item("c", "earliest", True, 0.5), item("c", "latest", True, 0.6),
             item("d", "earliest", True, 0.5), item("d", "latest", True, 0.502)]  # fmt: skip
    assert utils.tpr(items) == pytest.approx(0.5) and utils.tnr(items) == pytest.approx(0.5)


@pytest.mark.slow
def test_lm_eval_gives_biaslens_detector_rates_on_smollm2(tmp_path):
    import biaslens
    from biaslens.models.checkpoints.packaged import converted_smollm2
    from tests.conftest import DATA

    folder = converted_smollm2()
    [task] = export_tasks(("sib-detect",), tmp_path / "tasks", limit=2, data_dir=DATA)
    theirs = lm_eval_results(tmp_path, folder, task.name)
    ours = biaslens.run(
        "sib-detect", "default", output=tmp_path / "run", limit=2, data_dir=DATA, report=False,
        device="cpu",
    )  # fmt: skip
    rates = pd.read_csv(ours.run_dir / "rates.csv").set_index("set")
    for set_name, row in rates.iterrows():
        for rate in ("tpr", "tnr"):
            assert theirs[f"{rate}_{set_name},none"] == pytest.approx(row[rate], nan_ok=True)
