"""Token-level helpers shared by the backends and the decoders."""

from __future__ import annotations

from collections.abc import Sequence

MASK = "[MASK]"
"""Marks the slot of a masked-LM request; backends replace it with their tokenizer's mask."""


def pad_sequences(sequences: Sequence[Sequence[int]], pad_id: int, left: bool, device):
    """Token ids padded to the longest sequence (on the left for causal prompts) and their
    attention mask, both on ``device`` (torch tensors)."""
    import torch

    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        span = slice(width - len(seq), width) if left else slice(0, len(seq))
        ids[row, span] = torch.tensor(seq)
        mask[row, span] = 1
    return ids.to(device), mask.to(device)


def common_prefix_length(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix, leaving every sequence at least one own token."""
    shortest = min(len(s) for s in sequences)
    length = 0
    while length < shortest - 1 and all(s[length] == sequences[0][length] for s in sequences):
        length += 1
    return length
