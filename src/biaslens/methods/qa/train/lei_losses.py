"""The LEI group losses (Zhao et al. 2021, Appendix B.2), on per-subject probabilities.

Every loss takes ``probs`` of shape (batch, 2 subjects, K): for an extractive model K = 2
(p_start at the subject's first token, p_end at its last token), for a generative model K = 1
(the candidate's probability normalised over the two subjects). Each returns one loss per row.

* ethical: |Σ_k p_k(x1) − p_k(x2)| = |p_s(x1) − p_s(x2) + p_e(x1) − p_e(x2)|;
* adversarial: Σ_k (1 − p_k(x_dom)), x_dom the zero-shot model's dominant subject;
* irrelevant: Σ |p − p_zero-shot| over both subjects and all K (L1 to the stored probabilities).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def ethical_loss(probs: torch.Tensor) -> torch.Tensor:
    """|p_s0 − p_s1 + p_e0 − p_e1| per row: the two subjects should score alike."""
    return (probs[:, 0, :] - probs[:, 1, :]).sum(-1).abs()


def adversarial_loss(probs: torch.Tensor, dominant: torch.Tensor) -> torch.Tensor:
    """(1 − p_s[dom]) + (1 − p_e[dom]) per row; ``dominant`` holds 0 (first) or 1 (second)."""
    picked = probs[torch.arange(len(probs), device=probs.device), dominant.long()]
    return (1.0 - picked).sum(-1)


def irrelevant_loss(probs: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """L1 distance per row to the zero-shot model's probabilities (same shape as ``probs``)."""
    return (probs - reference.to(probs)).abs().sum(dim=(1, 2))


def span_cross_entropy(
    start_logprobs: torch.Tensor,
    end_logprobs: torch.Tensor,
    start_positions: torch.Tensor,
    end_positions: torch.Tensor,
) -> torch.Tensor:
    """The standard SQuAD loss per row: ½[CE(start) + CE(end)] on log-softmaxed logits."""
    start = F.nll_loss(start_logprobs, start_positions, reduction="none")
    end = F.nll_loss(end_logprobs, end_positions, reduction="none")
    return 0.5 * (start + end)


def answer_lm_loss(answer_logprobs: torch.Tensor, answer_lengths: torch.Tensor) -> torch.Tensor:
    """Language-modeling loss of a generative QA row: mean negative log-likelihood per answer
    token (``answer_logprobs`` = summed log p of the answer tokens)."""
    return -answer_logprobs / answer_lengths.to(answer_logprobs)
