"""Grouped-query attention on a CPU without copying the KV cache per head.

transformers' ``sdpa`` attention repeats each key/value head for its query heads
(``repeat_kv``: a copy of the whole cache, every layer, every forward pass) whenever an
attention mask is given, because masked GQA falls back to a slow kernel on CUDA. biaslens always
passes a mask (left padding, shared prefixes), and on a CPU PyTorch's SDPA takes the grouped
heads directly (``enable_gqa=True``): the same numbers without the copy (SmolLM2 MGC scoring:
``copy_`` was 7% of the time). :func:`use_cpu_gqa` switches a loaded model to
:func:`cpu_gqa_attention`, which handles that one case and hands every other one (GPU, no mask,
one query token, position bias, soft-capping, dropout, a paged cache, gradients for
fine-tuning) to transformers' own ``sdpa`` function unchanged. It also runs a prefix tree's
block attention (:mod:`.tree_blocks`) when the forward pass carries a block plan.
"""

from __future__ import annotations

import torch

from biaslens.models.backends.hf.tree_blocks import PLAN, block_attention

NAME = "biaslens_cpu_gqa"
"""The attention implementation's name in transformers' ``AttentionInterface``."""


def cpu_gqa_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: (batch, heads, q, dim) inputs, output
    (batch, q, heads, dim)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    plan = kwargs.get(PLAN)
    if plan is not None:  # a prefix tree run as one sequence (.tree_blocks)
        return block_attention(query, key, value, plan, scaling), None
    groups = getattr(module, "num_key_value_groups", 1)
    special = any(
        kwargs.get(name) is not None for name in ("position_bias", "softcap", "cache")
    ) or kwargs.get("output_attentions", False)
    if (
        query.device.type != "cpu"
        or (torch.is_grad_enabled() and query.requires_grad)
        or groups == 1
        or attention_mask is None
        or query.shape[2] == 1
        or dropout
        or special
    ):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, scale=scaling, enable_gqa=True
    )
    return output.transpose(1, 2).contiguous(), None


def use_cpu_gqa(model: torch.nn.Module) -> bool:
    """Switch ``model`` to :func:`cpu_gqa_attention` if it runs ``sdpa`` attention with grouped
    key/value heads on a CPU; returns whether it did."""
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    except ImportError:  # a transformers without pluggable attention: its own sdpa stays
        return False

    config = getattr(model, "config", None)
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None)
    if getattr(config, "_attn_implementation", None) != "sdpa" or not heads or not kv_heads:
        return False
    if kv_heads == heads or next(model.parameters()).device.type != "cpu":
        return False
    if not getattr(model, "_supports_attention_backend", False) or not hasattr(
        model, "set_attn_implementation"
    ):
        return False  # an architecture that calls its own attention code
    AttentionInterface.register(NAME, cpu_gqa_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)  # the very masks sdpa is given
    model.set_attn_implementation(NAME)
    return True
