"""The LEI trainer on tiny extractive and generative models (and SmolLM2, marked slow)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from biaslens.methods.qa.data import lei
from biaslens.methods.qa.train.lei import LeiTrainConfig, LeiTrainer
from biaslens.methods.qa.train.lei_data import LeiTrainingSet, file_reference, training_set
from biaslens.models import BackendConfig, load_model
from tests.conftest import DATA

TRAIN_64 = lei.split_path("religion/train_64", DATA / "lei")


def _ethical_only() -> LeiTrainingSet:
    split = lei.read_split(TRAIN_64)
    return training_set(split, file_reference(split, TRAIN_64), TRAIN_64, types=("ethical",))


def _generative(data: LeiTrainingSet) -> LeiTrainingSet:
    reference = np.full((len(data), 2, 1), 0.5)
    return LeiTrainingSet(data.examples, reference, data.dominant)


def _ethical_loss(trainer: LeiTrainer, data: LeiTrainingSet) -> float:
    encoded = trainer.encode(data.examples)
    with torch.no_grad():
        losses = trainer.intervention_losses(data, encoded, np.arange(len(data)))
    return float(losses["ethical"])


@pytest.mark.parametrize(("name", "mode"), [("roberta-qa", "extractive"), ("llama", "generative")])
def test_one_step_lowers_the_ethical_loss_on_its_batch(tiny_models, name, mode):
    lm = load_model(str(tiny_models[name]), BackendConfig(device="cpu"))  # a private copy
    data = _ethical_only()
    data = data if mode == "extractive" else _generative(data)
    config = LeiTrainConfig(learning_rate=1e-3, epochs=1, batch_size=len(data), seed=1)
    trainer = LeiTrainer(lm, config, mode)
    before = _ethical_loss(trainer, data)
    log = trainer.train(data)
    assert len(log) == 1 and log["loss_ethical"].iloc[0] > 0  # one step, dropout on
    after = _ethical_loss(trainer, data)
    assert after < before


def test_all_losses_and_mixed_qa_rows(tiny_models):
    lm = load_model(str(tiny_models["roberta-qa"]), BackendConfig(device="cpu"))
    split = lei.read_split(TRAIN_64)
    data = training_set(split, file_reference(split, TRAIN_64), TRAIN_64)
    context = "Alice and Bob went to the market. Bob bought apples."
    qa = pd.DataFrame(
        {
            "id": ["1", "2"],
            "question": ["Who bought apples?", "Where did they go?"],
            "context": [context, context],
            "answer": ["Bob", "the market"],
            "answer_start": [context.index("Bob bought"), context.index("the market")],
        }
    )
    config = LeiTrainConfig(learning_rate=1e-4, epochs=2, batch_size=12)
    trainer = LeiTrainer(lm, config, "extractive")
    log = trainer.train(data, qa)
    # 48 examples / 12 per step = 4 steps per epoch; 48 / 3 = 16 QA rows spread over them
    assert log["step"].tolist() == list(range(1, 9))
    assert {"loss_ethical", "loss_adversarial", "loss_irrelevant", "loss_qa"} <= set(log)
    assert log["lr"].iloc[-1] == pytest.approx(0.0)  # linear decay to 0
    batches = trainer.epoch_batches(data, n_qa=2, epoch=0)
    assert sum(len(q) for _, q in batches) == 16
    assert [b.tolist() for b, _ in batches] == [
        b.tolist() for b, _ in trainer.epoch_batches(data, 2, 0)
    ]
    assert [b.tolist() for b, _ in batches] != [
        b.tolist() for b, _ in trainer.epoch_batches(data, 2, 1)
    ]


def test_bad_configs_fail_before_training(tiny_backends):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="greater than 0"):
        LeiTrainConfig(learning_rate=0, epochs=1)
    from biaslens.errors import BiaslensError

    with pytest.raises(BiaslensError, match="cannot be trained in generative mode"):
        LeiTrainer(
            tiny_backends["roberta-qa"], LeiTrainConfig(learning_rate=1, epochs=1), "generative"
        )


@pytest.mark.slow
def test_smollm2_generative_step_lowers_the_ethical_loss():
    lm = load_model("default", BackendConfig(device="cpu"))
    data = _generative(_ethical_only())
    data = LeiTrainingSet(data.examples.head(6), data.reference[:6], data.dominant[:6])
    trainer = LeiTrainer(
        lm, LeiTrainConfig(learning_rate=1e-4, epochs=1, batch_size=6), "generative"
    )
    before = _ethical_loss(trainer, data)
    trainer.train(data)
    assert _ethical_loss(trainer, data) < before


def test_reference_reduction_sums_rows_and_halves(tiny_models):
    """LEI's mutils.py: each group loss summed over its rows, the total halved."""
    lm = load_model(str(tiny_models["roberta-qa"]), BackendConfig(device="cpu"))
    data = _ethical_only()
    batch = np.arange(len(data))
    mean = LeiTrainer(lm, LeiTrainConfig(learning_rate=1e-3, epochs=1), "extractive")
    reference = LeiTrainer(
        lm, LeiTrainConfig(learning_rate=1e-3, epochs=1, loss_reduction="reference"), "extractive"
    )
    with torch.no_grad():
        a = mean.intervention_losses(data, mean.encode(data.examples), batch)["ethical"]
        b = reference.intervention_losses(data, reference.encode(data.examples), batch)["ethical"]
    assert float(b) == pytest.approx(float(a) * len(batch) / 2, rel=1e-5)
