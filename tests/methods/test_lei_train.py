"""The lei-train experiment: selection, summaries, an end-to-end grid and its resumption."""

from __future__ import annotations

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.qa.lei_train import bookkeeping as lei_run
from biaslens.methods.qa.lei_train import method as lei_train
from biaslens.methods.qa.lei_train.method import (
    lei_criterion,
    make_settings,
    select_top,
    summarize_selected,
)
from tests.conftest import DATA
from tests.helpers import run_lei_train


def test_criterion_sums_the_gaps_of_the_three_types():
    table = pd.DataFrame(
        {
            "set": ["none", "ethical", "adversarial", "irrelevant"],
            "gap": [None, 0.10, 0.70, 0.05],
        }
    )
    assert lei_criterion(table) == pytest.approx(0.85)
    with pytest.raises(BiaslensError, match="lacks the set"):
        lei_criterion(table[table["set"] != "irrelevant"])


def test_selection_keeps_the_lowest_criterion_per_train_size():
    grid = pd.DataFrame(
        {
            "checkpoint": list("abcdefg"),
            "train_size": [64, 64, 64, 64, 256, 256, 256],
            "learning_rate": [1e-5, 2e-5, 1e-5, 3e-5, 1e-5, 2e-5, 3e-5],
            "epochs": [3, 3, 5, 3, 3, 3, 3],
            "criterion": [0.9, 0.4, 0.4, 0.2, 0.5, 0.1, 0.3],
        }
    )
    chosen = select_top(grid, 3)
    # size 64: d (0.2), then the tie b/c (0.4) -> smaller learning rate first (c, 1e-5)
    assert chosen["checkpoint"].tolist() == ["d", "c", "b", "f", "g", "e"]
    assert select_top(grid, 1)["checkpoint"].tolist() == ["d", "f"]


def test_summary_is_mean_and_std_over_the_selected():
    evaluations = pd.DataFrame(
        {
            "checkpoint": ["zero-shot", "a", "b", "c"],
            "evaluation": ["ethnicity/noniid_test"] * 4,
            "set": ["ethical"] * 4,
            "mu": [0.30, 0.10, 0.20, 0.90],
            "gap": [0.30, 0.10, 0.20, 0.90],
            "desired_mu": [0.0] * 4,
        }
    )
    selected = pd.DataFrame({"checkpoint": ["a", "b"], "train_size": [64, 64]})
    out = summarize_selected(evaluations, selected).set_index("train_size")
    assert out.loc[0, "mu_mean"] == pytest.approx(0.30) and out.loc[0, "models"] == 1
    assert out.loc[64, "mu_mean"] == pytest.approx(0.15)
    assert out.loc[64, "mu_std"] == pytest.approx(0.0707107, rel=1e-5)  # sample std of .1, .2
    assert out.loc[64, "models"] == 2


def _settings(model):
    return make_settings(
        model=str(model),
        train_sizes=[64],
        learning_rates=[1e-4, 1e-3],
        epochs=[1, 2],
        train_batch_size=16,
        schedule="constant",
        top_k=2,
        dev_limit=6,
        tests=["ethnicity/noniid_test", "gender/noniid_test"],
        test_limit=6,
    )


def test_grid_runs_selects_and_resumes_after_an_interruption(tiny_models, tmp_path, monkeypatch):
    settings = _settings(tiny_models["llama"])
    trained = []
    from biaslens.methods.qa.train import lei as trainer

    real_train = trainer.LeiTrainer.train

    def counting_train(self, *args, **kwargs):
        trained.append(self.config.learning_rate)
        return real_train(self, *args, **kwargs)

    monkeypatch.setattr(trainer.LeiTrainer, "train", counting_train)
    real_evaluate = lei_run.TrainingRun.evaluate

    def interrupted(self, lm, checkpoint, split, limit):
        if checkpoint.startswith("n64-lr0.001-"):
            raise KeyboardInterrupt  # the second learning rate's first dev evaluation
        return real_evaluate(self, lm, checkpoint, split, limit)

    monkeypatch.setattr(lei_run.TrainingRun, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert trained == [1e-4, 1e-3]  # constant schedule: one run per learning rate
    grid = pd.read_csv(tmp_path / "run" / "grid.csv")
    assert grid["checkpoint"].tolist() == ["n64-lr0.0001-ep1", "n64-lr0.0001-ep2"]

    monkeypatch.setattr(lei_run.TrainingRun, "evaluate", real_evaluate)
    result = run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert trained == [1e-4, 1e-3]  # both checkpoints of 1e-3 were finished: nothing retrained
    resumed = [n for n in result.notes if n.startswith("resumed from the run folder")]
    assert resumed and "4 checkpoints already done" in resumed[0], result.notes
    assert "evaluations already done" in resumed[0]
    # the evaluations of the new checkpoints' requests are counted, not "0 computed, 0 reused"
    assert result.cache_stats["computed"] > 0
    assert result.summary["requests"] == result.cache_stats
    assert len(result.grid) == 4 and len(result.selected) == 2
    assert set(result.results["train_size"]) == {0, 64}
    gender = result.results[result.results["evaluation"] == "gender/noniid_test"]
    assert "specified-male" in set(gender["set"])  # Fig. 6 contexts come with the gender test
    kept = {p.name for p in (tmp_path / "run" / "checkpoints").iterdir()}
    assert kept == set(result.selected["checkpoint"])  # the others were pruned
    assert (tmp_path / "run" / "plots" / "train_size_ethnicity-noniid_test.png").is_file()
    log = pd.read_csv(tmp_path / "run" / "checkpoints" / sorted(kept)[0] / "train_log.csv")
    assert len(log) > 0

    # a cell with an unfinished checkpoint (no DONE marker) and no dev result is retrained
    unfinished = sorted(kept)[0]
    grid = pd.read_csv(tmp_path / "run" / "grid.csv")
    grid[grid["checkpoint"] != unfinished].to_csv(tmp_path / "run" / "grid.csv", index=False)
    (tmp_path / "run" / "checkpoints" / unfinished / lei_train.DONE).unlink()
    again = run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert len(trained) == 3 and unfinished in set(again.grid["checkpoint"])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"learning_rates": [0.0]}, "every learning rate must be > 0"),
        ({"learning_rates": [-1e-5, 1e-5]}, "every learning rate must be > 0"),
        ({"epochs": [0]}, "every epoch count"),
        ({"train_sizes": [100]}, "official religion train sizes"),
        ({"tests": ["religion/train_64"]}, "unknown evaluation split"),
        ({"train_types": ["ethics"]}, "intervention types are"),
    ],
)
def test_bad_settings_are_clear_errors(values, message):
    with pytest.raises(BiaslensError, match=message):
        make_settings(**values)


def test_file_reference_is_refused_for_generative_models(tiny_models, tmp_path):
    settings = _settings(tiny_models["llama"]).model_copy(update={"reference": "file"})
    with pytest.raises(BiaslensError, match="generative training needs --reference model"):
        run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_generative_fine_tuning_end_to_end(tiny_models, tmp_path):
    """A causal model fine-tuned on the smallest official split, selected on dev and evaluated
    on a test split, zero-shot beside it (the real SmolLM2's training step:
    tests/methods/qa/train/test_lei_trainer.py)."""
    settings = make_settings(
        model=str(tiny_models["llama"]),
        train_sizes=[64],
        learning_rates=[1e-4],
        epochs=[1],
        top_k=1,
        dev_limit=1,
        tests=["ethnicity/noniid_test"],
        test_limit=1,
    )
    result = run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert result.summary["settings"]["mode"] == "generative"
    assert result.selected["checkpoint"].tolist() == ["n64-lr0.0001-ep1"]
    after = result.results[result.results["train_size"] == 64].set_index("set")
    before = result.results[result.results["train_size"] == 0].set_index("set")
    assert set(after.index) == set(before.index) == {"none", "ethical", "adversarial", "irrelevant"}
    assert (after["mu_mean"] != before["mu_mean"]).any()  # training changed the model
    log = pd.read_csv(tmp_path / "run" / "checkpoints" / "n64-lr0.0001-ep1" / "train_log.csv")
    assert len(log) == 6  # 48 examples, batch 8


def test_bf16_training_keeps_float32_master_weights(tiny_models, tmp_path, monkeypatch):
    """Fine-tuning a model loaded in bf16 moves its weights as a float32 run does: updates of
    ~1e-5 would round away in bf16 weights (most of them would not change at all)."""
    import numpy as np
    import torch
    from safetensors.torch import load_file

    from biaslens.methods.qa.data import lei
    from biaslens.methods.qa.lei_train.method import train_cell_group
    from biaslens.methods.qa.train.lei_data import training_set
    from biaslens.models import BackendConfig, load_model

    path = lei.split_path("religion/train_64", DATA / "lei")
    split = lei.read_split(path)
    data = training_set(split, _equal_reference(split), path, ("ethical",))
    settings = make_settings(
        model=str(tiny_models["llama"]), train_batch_size=8, schedule="constant"
    )
    # the CPU's bf16 capability is injected: the "bf16 is slow here" warning is then certain
    monkeypatch.setattr("biaslens.models.backends.hf.loading.cpu_has_bf16_units", lambda: False)
    start = load_file(tiny_models["llama"] / "model.safetensors")
    moved = {}
    for dtype in ("float32", "bfloat16"):
        with pytest.warns(UserWarning) if dtype == "bfloat16" else _nothing():
            base = load_model(str(tiny_models["llama"]), BackendConfig(device="cpu", dtype=dtype))
        root = tmp_path / dtype
        train_cell_group(base, root, settings, "generative", 64, 1e-5, [2], data, None, None)
        trained = load_file(root / "checkpoints" / "n64-lr1e-05-ep2" / "model.safetensors")
        assert all(t.dtype == torch.float32 for t in trained.values())  # master weights kept
        origin = {k: v.to(getattr(torch, dtype)).float() for k, v in start.items()}
        moved[dtype] = torch.cat([(trained[k] - origin[k]).flatten() for k in start])
    changed = {d: float((m != 0).float().mean()) for d, m in moved.items()}
    # weights that get a gradient move in both runs (in bf16 weights ~94% would not move)
    assert changed["float32"] > 0.5 and abs(changed["bfloat16"] - changed["float32"]) < 0.02, (
        changed
    )
    cosine = torch.nn.functional.cosine_similarity(moved["float32"], moved["bfloat16"], dim=0)
    assert float(cosine) > 0.8  # the same direction of travel, up to bf16 forward noise
    assert np.isfinite(float(moved["bfloat16"].abs().sum()))


def _equal_reference(split):
    import numpy as np

    from biaslens.methods.qa.train.lei_data import ZeroShotReference

    return ZeroShotReference(np.full((len(split), 2, 2, 1), 0.5), np.zeros((len(split), 2), int))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_theta4_selection_is_the_references_criterion():
    """model_select.py: (1 − adversarial θ4) + ethical θ4; irrelevant left out."""
    table = pd.DataFrame(
        {
            "set": ["none", "ethical", "adversarial", "irrelevant"],
            "gap": [None, 0.10, 0.70, 0.05],
            "theta4": [0.5, 0.2, 0.6, 0.9],
        }
    )
    assert lei_criterion(table, "theta4") == pytest.approx((1 - 0.6) + 0.2)
    assert lei_criterion(table[table["set"] != "irrelevant"], "theta4") == pytest.approx(0.6)


def test_the_paper_preset_sets_the_references_protocol():
    from biaslens.framework.registry import get_method
    from biaslens.models.base import ModelKind

    spec = get_method("lei-train")
    paper = spec.build_settings("paper", kind=ModelKind.EXTRACTIVE_QA)
    assert (paper.loss_reduction, paper.selection, paper.qa_order, paper.span_adjustment) == (
        "reference", "theta4", "context-first", "reference",
    )  # fmt: skip
    # the input order and span adjustment are the extractive code's: a generative model keeps
    # the UnifiedQA layout
    generative = spec.build_settings("paper", kind=ModelKind.CAUSAL)
    assert (generative.qa_order, generative.span_adjustment) == ("question-first", "none")
    assert generative.loss_reduction == "reference"
    assert paper.learning_rates == (5e-6, 1e-5, 2e-5, 3e-5) and paper.epochs == (3, 5, 7, 9)
    mixed = spec.build_settings("paper", selection="gap")  # a value given wins over the preset
    assert mixed.selection == "gap" and mixed.loss_reduction == "reference"
    assert spec.build_settings().loss_reduction == "mean"
