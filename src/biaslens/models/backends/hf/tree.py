"""Next-token logits of causal prompts computed over their prefix tree: every distinct prefix
token once, no padding between prompts, no copy of a shared cache per prompt.

Probe prompts are a prefix tree (MGC: one instruction, then the W value, the verb, the life
stage). :mod:`.prefix` runs it level by level, each level a padded batch whose rows copy their
parent's key/value cache; the padding and the copies cost as much as the sharing saves
(measured on SmolLM2: 1.9× the tree's tokens executed). Here the tree's nodes are *packed*:
after the batch's common prefix (run once, its cache read by every row), the nodes below it go
into a few rows of up to :data:`ROW_TOKENS` tokens, a subtree kept whole within a row (one too
large for a row is split at its children, each part carrying its ancestors' few tokens along).
Every node attends to the common prefix and to its own ancestors in its row, through a 4-D
attention mask (SpecInfer's tree attention, Miao et al. 2024, §4.2), at position id = its depth:
the same keys, values and positions as a plain forward of each prompt, so the same logits.

The vocabulary projection runs on the prompts' last nodes only (the base model's output there,
through the output embeddings). A model whose attention does not take a custom 4-D mask with
position ids as given (ALiBi, sliding windows shorter than the prompts, an implementation that
ignores the mask) or whose head does more than the output embeddings (soft-capped or scaled
logits) would give other numbers, so :func:`tree_works` compares the two ways on a few
prompts when a model first meets this path, and :mod:`.scoring` keeps the level-wise prefill
where they differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from biaslens.common.tokens import common_prefix_length

if TYPE_CHECKING:
    from biaslens.models.backends.hf.runtime import HFRuntime

ROW_TOKENS = 256
"""Tokens per packed row at most: the attention within a row grows with its square."""
MIN_SHARED_PREFIX = 8
"""A batch-wide prefix shorter than this is packed with the rest rather than cached."""
AGREEMENT = 1e-4
"""The largest |Δ log p| over the vocabulary :func:`tree_works` accepts between the two ways."""


@dataclass
class Tree:
    """The prompts' prefix tree below ``shared`` tokens: per node its token, parent (−1 at the
    top) and depth (its position id); ``ends``: each prompt's last node."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    children: list[list[int]] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    tops: list[int] = field(default_factory=list)


def build_tree(prompts: list[list[int]], shared: int) -> Tree:
    """The prefix tree of ``prompts`` below their first ``shared`` tokens (each prompt keeps at
    least its last token below them)."""
    tree, index = Tree(), {}
    for prompt in prompts:
        parent = -1
        for depth in range(shared, len(prompt)):
            key = (parent, prompt[depth])
            node = index.get(key)
            if node is None:
                node = index[key] = len(tree.tokens)
                tree.tokens.append(prompt[depth])
                tree.parents.append(parent)
                tree.depths.append(depth)
                tree.children.append([])
                (tree.children[parent] if parent >= 0 else tree.tops).append(node)
            parent = node
        tree.ends.append(parent)
    return tree


def subtree_sizes(tree: Tree) -> list[int]:
    """Nodes under each node, itself included (children always come after their parent)."""
    sizes = [1] * len(tree.tokens)
    for node in range(len(tree.tokens) - 1, -1, -1):
        if tree.parents[node] >= 0:
            sizes[tree.parents[node]] += sizes[node]
    return sizes


def pack(tree: Tree, row_tokens: int = ROW_TOKENS) -> list[list[int]]:
    """Rows of nodes, each holding every ancestor of its nodes before them: the tree cut into
    units (whole subtrees of at most half a row with the path above them; a larger subtree is
    cut at its children), the units dealt largest first to the shortest of as few rows as the
    tokens need (longest-processing-time scheduling: the rows come out alike, and a batch's
    padding is its longest row's); a path a row already holds is not repeated in it."""
    sizes = subtree_sizes(tree)
    units: list[list[int]] = []

    def cut(node: int, path: list[int]) -> None:
        if sizes[node] + len(path) > max(row_tokens // 2, 1) and tree.children[node]:
            for child in tree.children[node]:
                cut(child, [*path, node])
            return
        unit, stack = list(path), [node]
        while stack:
            n = stack.pop()
            unit.append(n)
            stack.extend(reversed(tree.children[n]))
        units.append(unit)

    for top in tree.tops:
        cut(top, [])
    units.sort(key=len, reverse=True)
    count = max(1, -(-sum(map(len, units)) // row_tokens))
    while True:
        rows = _deal(units, count)
        if max(map(len, rows)) <= max(row_tokens, len(units[0])) or count >= len(units):
            return rows
        count += 1


def _deal(units: list[list[int]], count: int) -> list[list[int]]:
    """``units`` (largest first) dealt each to the shortest of ``count`` rows."""
    rows: list[list[int]] = [[] for _ in range(count)]
    held: list[set[int]] = [set() for _ in range(count)]
    for unit in units:
        r = min(range(count), key=lambda k: len(rows[k]))
        added = [n for n in unit if n not in held[r]]
        rows[r].extend(added)
        held[r].update(added)
    return [row for row in rows if row]


def tree_logits(b: HFRuntime, prompts: list[list[int]], row_tokens: int = ROW_TOKENS):
    """(n, vocab) next-token logits after each prompt, over the packed prefix tree (module
    docstring)."""
    model, device = b.model, b.device
    shared = common_prefix_length(prompts) if len(prompts) > 1 else 0
    shared = min(shared, min(len(p) for p in prompts) - 1)
    shared = shared if shared >= MIN_SHARED_PREFIX else 0
    tree = build_tree(prompts, shared)
    rows = pack(tree, row_tokens)
    width = max(len(row) for row in rows)
    ids = np.full((len(rows), width), b.pad_id, dtype=np.int64)
    positions = np.zeros((len(rows), width), dtype=np.int64)
    allowed = np.zeros((len(rows), 1, width, shared + width), dtype=bool)
    allowed[..., :shared] = True
    padding = np.arange(width)
    allowed[:, 0, padding, shared + padding] = True  # padding attends to itself (no empty row)
    where: dict[int, tuple[int, int]] = {}
    for r, row in enumerate(rows):
        local = {node: i for i, node in enumerate(row)}
        ids[r, : len(row)] = [tree.tokens[n] for n in row]
        positions[r, : len(row)] = [tree.depths[n] for n in row]
        for i, node in enumerate(row):
            where.setdefault(node, (r, i))
            parent = tree.parents[node]
            if parent >= 0:  # its parent's ancestors, then itself (the parent comes first)
                allowed[r, 0, i] = allowed[r, 0, local[parent]]
                allowed[r, 0, i, shared + local[parent] + 1 :] = False
            allowed[r, 0, i, shared + i] = True
    ids, positions, allowed = map(torch.from_numpy, (ids, positions, allowed))
    cache = None
    if shared:
        prefix = torch.tensor([prompts[0][:shared]], device=device)
        cache = model(input_ids=prefix, use_cache=True).past_key_values
        cache.reorder_cache(torch.zeros(len(rows), dtype=torch.long, device=device))
    hidden = model.base_model(
        input_ids=ids.to(device),
        attention_mask=_additive(allowed, model.dtype).to(device),
        position_ids=positions.to(device),
        past_key_values=cache,
        use_cache=cache is not None,
    )[0]
    spots = torch.tensor([where[end] for end in tree.ends], device=device)
    return model.get_output_embeddings()(hidden[spots[:, 0], spots[:, 1]])


def _additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean attend/skip mask as the additive float mask transformers' attention takes."""
    mask = torch.zeros(allowed.shape, dtype=dtype)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def tree_works(b: HFRuntime, prompts: list[list[int]], reference) -> bool:
    """Whether the packed tree gives ``reference``'s logits (a plain way's) on up to four of
    ``prompts``, to :data:`AGREEMENT` in log-probability."""
    sample = prompts[:4]
    if len(sample) < 2:
        return False
    try:
        ours = tree_logits(b, sample, row_tokens=max(len(p) for p in sample))
    except Exception:  # an attention that refuses a 4-D mask or the index list
        return False
    theirs = reference(sample)
    gap = (ours.float().log_softmax(-1) - theirs.float().log_softmax(-1)).abs().max()
    return bool(gap <= AGREEMENT)
