"""Each LEI loss against values computed by hand on constructed probabilities."""

from __future__ import annotations

import math

import pytest
import torch

from biaslens.methods.qa.train import lei_losses as L

# one row, (2 subjects, K = 2): first subject p_start 0.5, p_end 0.4; second 0.2, 0.1
EXTRACTIVE = torch.tensor([[[0.5, 0.4], [0.2, 0.1]], [[0.6, 0.1], [0.2, 0.5]]])


def test_ethical_loss_is_the_absolute_summed_difference():
    # |0.5 - 0.2 + 0.4 - 0.1| = 0.6 ; |0.6 - 0.2 + 0.1 - 0.5| = 0 (start and end cancel)
    assert L.ethical_loss(EXTRACTIVE).tolist() == pytest.approx([0.6, 0.0], abs=1e-7)
    generative = torch.tensor([[[0.7], [0.3]], [[0.25], [0.75]]])
    assert L.ethical_loss(generative).tolist() == pytest.approx([0.4, 0.5])


def test_adversarial_loss_rewards_the_dominant_subject_only():
    # row 0 dominant = second: (1 - 0.2) + (1 - 0.1) = 1.7 ; row 1 dominant = first: 0.4 + 0.9
    losses = L.adversarial_loss(EXTRACTIVE, torch.tensor([1, 0]))
    assert losses.tolist() == pytest.approx([1.7, 1.3])
    assert L.adversarial_loss(torch.tensor([[[0.8], [0.2]]]), torch.tensor([0])).item() == (
        pytest.approx(0.2)
    )


def test_irrelevant_loss_is_l1_to_the_zero_shot_probabilities():
    reference = torch.tensor([[[0.4, 0.4], [0.3, 0.3]], [[0.6, 0.1], [0.2, 0.5]]])
    # |0.1| + 0 + |-0.1| + |-0.2| = 0.4 ; identical row: 0
    assert L.irrelevant_loss(EXTRACTIVE, reference).tolist() == pytest.approx([0.4, 0.0])


def test_span_cross_entropy_is_the_mean_of_start_and_end_nll():
    logits = torch.tensor([[0.0, math.log(3.0)]])  # softmax = [1/4, 3/4]
    logprobs = logits.log_softmax(-1)
    loss = L.span_cross_entropy(logprobs, logprobs, torch.tensor([1]), torch.tensor([0]))
    assert loss.item() == pytest.approx(0.5 * (math.log(4 / 3) + math.log(4)))


def test_answer_lm_loss_is_mean_nll_per_token():
    loss = L.answer_lm_loss(torch.tensor([-3.0, -1.0]), torch.tensor([2, 1]))
    assert loss.tolist() == pytest.approx([1.5, 1.0])
