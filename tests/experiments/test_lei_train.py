"""The lei-train experiment: selection, summaries, an end-to-end grid and its resumption."""

from __future__ import annotations

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.experiments import lei_train
from biaslens.experiments.lei_train import (
    lei_criterion,
    make_lei_train_settings,
    run_lei_train,
    select_top,
    summarize_selected,
)
from tests.conftest import DATA


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
    return make_lei_train_settings(
        model=str(model),
        train_sizes=[64],
        learning_rates=[1e-4, 1e-3],
        epochs=[1, 2],
        batch_size=16,
        schedule="constant",
        top_k=2,
        dev_limit=6,
        tests=["ethnicity/noniid_test", "gender/noniid_test"],
        test_limit=6,
    )


def test_grid_runs_selects_and_resumes_after_an_interruption(tiny_models, tmp_path, monkeypatch):
    settings = _settings(tiny_models["llama"])
    trained = []
    real_train = lei_train.LeiTrainer.train

    def counting_train(self, *args, **kwargs):
        trained.append(self.config.learning_rate)
        return real_train(self, *args, **kwargs)

    monkeypatch.setattr(lei_train.LeiTrainer, "train", counting_train)
    real_evaluate = lei_train._Run.evaluate

    def interrupted(self, lm, checkpoint, split, limit):
        if checkpoint.startswith("n64-lr0.001-"):
            raise KeyboardInterrupt  # the second learning rate's first dev evaluation
        return real_evaluate(self, lm, checkpoint, split, limit)

    monkeypatch.setattr(lei_train._Run, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert trained == [1e-4, 1e-3]  # constant schedule: one run per learning rate
    grid = pd.read_csv(tmp_path / "run" / "grid.csv")
    assert grid["checkpoint"].tolist() == ["n64-lr0.0001-ep1", "n64-lr0.0001-ep2"]

    monkeypatch.setattr(lei_train._Run, "evaluate", real_evaluate)
    result = run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert trained == [1e-4, 1e-3]  # both checkpoints of 1e-3 were finished: nothing retrained
    assert len(result.grid) == 4 and len(result.selected) == 2
    assert set(result.results["train_size"]) == {0, 64}
    gender = result.results[result.results["evaluation"] == "gender/noniid_test"]
    assert "specified" in set(gender["set"])  # Fig. 6 contexts come with the gender test
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
        make_lei_train_settings(**values)


def test_file_reference_is_refused_for_generative_models(tiny_models, tmp_path):
    settings = _settings(tiny_models["llama"]).model_copy(update={"reference": "file"})
    with pytest.raises(BiaslensError, match="generative training needs --reference model"):
        run_lei_train(settings, tmp_path / "run", data_dir=DATA)
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.slow
def test_smollm2_generative_fine_tuning_end_to_end(tmp_path):
    settings = make_lei_train_settings(
        train_sizes=[64],
        learning_rates=[1e-4],
        epochs=[1],
        top_k=1,
        dev_limit=3,
        tests=["ethnicity/noniid_test"],
        test_limit=3,
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
