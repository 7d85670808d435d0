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
Where the model runs biaslens's own attention function, the nodes run instead as one sequence,
each once, with attention in blocks over the keys each block can see (:mod:`.tree_blocks`).

The vocabulary projection runs on the prompts' last nodes only (the base model's output there,
through the output embeddings). A model whose attention does not take a custom 4-D mask with
position ids as given (ALiBi, sliding windows shorter than the prompts, an implementation that
ignores the mask) or whose head does more than the output embeddings (soft-capped or scaled
logits) would give other numbers, so :func:`tree_works` compares the two ways on a few
prompts when a model first meets this path, and :mod:`.scoring` keeps the level-wise prefill
where they differ.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from biaslens.common.tokens import common_prefix_length
from biaslens.models.backends.hf.attention import NAME as ATTENTION
from biaslens.models.backends.hf.tree_blocks import (
    BLOCK_TOKENS,
    PLAN,
    block_plan,
    depth_first,
)

if TYPE_CHECKING:
    from biaslens.models.backends.hf.runtime import HFRuntime

ROW_TOKENS = 256
"""Tokens per packed row at most: the attention within a row grows with its square."""
MIN_SHARED_PREFIX = 8
"""A batch-wide prefix shorter than this is packed with the rest rather than cached."""
CHECK_BLOCK = 5
"""Queries per attention block in :func:`tree_works` (small: blocks that start inside a path)."""
EXTRA_ROWS = 3
"""Row counts tried beyond the best so far when packing (:func:`pack`)."""
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
    units (runs of sibling subtrees of at most half a row with the path above them; a larger
    subtree is cut at its children), the units dealt largest first to the shortest row
    (longest-processing-time scheduling); a path a row already holds is not repeated. Of the
    row counts from as few as the tokens need to :data:`EXTRA_ROWS` beyond the best found, the
    one whose rows padded to the longest run the fewest tokens (few large units dealt to just
    enough rows can leave one row long and the others short: all pay its length)."""
    sizes = subtree_sizes(tree)
    limit = max(row_tokens // 2, 1)
    units: list[list[int]] = []

    def whole(node: int) -> list[int]:
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(reversed(tree.children[n]))
        return out

    def cut(nodes: list[int], path: list[int]) -> None:
        """Units of sibling ``nodes`` under ``path``: runs of whole subtrees that fit together
        (the path carried once per run), a subtree too large cut at its children."""
        run: list[int] = []
        for node in nodes:
            if sizes[node] + len(path) > limit and tree.children[node]:
                cut(tree.children[node], [*path, node])
                continue
            if run and len(path) + len(run) + sizes[node] > limit:
                units.append(path + run)
                run = []
            run += whole(node)
        if run:
            units.append(path + run)

    cut(tree.tops, [])
    units.sort(key=len, reverse=True)
    least = max(1, -(-sum(map(len, units)) // row_tokens))
    best: list[list[int]] | None = None
    for count in range(least, max(least, len(units)) + 1):
        rows = _deal(units, count)
        if max(map(len, rows)) > max(row_tokens, len(units[0])):
            continue
        if best is None or _padded(rows) < _padded(best):
            best = rows
        elif count > len(best) + EXTRA_ROWS:
            break
    return best if best is not None else rows  # one unit per row: the most rows can do


def _padded(rows: list[list[int]]) -> int:
    """Tokens a batch of ``rows`` runs: each row padded to the longest."""
    return len(rows) * max(map(len, rows))


def _deal(units: list[list[int]], count: int) -> list[list[int]]:
    """``units`` (largest first) dealt each to the shortest of ``count`` rows."""
    rows: list[list[int]] = [[] for _ in range(count)]
    held: list[set[int]] = [set() for _ in range(count)]
    shortest = [(0, r) for r in range(count)]  # a heap of (length, row)
    for unit in units:
        _, r = heapq.heappop(shortest)
        added = [n for n in unit if n not in held[r]]
        rows[r].extend(added)
        held[r].update(added)
        heapq.heappush(shortest, (len(rows[r]), r))
    return [row for row in rows if row]


@dataclass
class Packed:
    """One packed pass: the tree (below ``shared`` cached tokens), where each node's first
    copy sits (row, column) and the base model's output there (rows, columns, hidden)."""

    tree: Tree
    where: dict[int, tuple[int, int]]
    hidden: torch.Tensor
    shared: int

    def at(self, nodes: list[int], device) -> torch.Tensor:
        """The hidden states of ``nodes``, one row each."""
        spots = torch.tensor([self.where[n] for n in nodes], device=device)
        return self.hidden[spots[:, 0], spots[:, 1]]


def added_tokens(sequences: list[list[int]]) -> list[int]:
    """Tokens each sequence adds to the prefix tree of those before it in sorted order (its
    length less its common prefix with the one just before): a batch's work on the tree."""
    order = sorted(range(len(sequences)), key=lambda i: sequences[i])
    added = [0] * len(sequences)
    previous: list[int] = []
    for i in order:
        sequence, same = sequences[i], 0
        while same < min(len(sequence), len(previous)) and sequence[same] == previous[same]:
            same += 1
        added[i], previous = max(1, len(sequence) - same), sequence
    return added


def shared_length(sequences: list[list[int]], keep: int) -> int:
    """The batch's common prefix run once as a cache: at most ``keep`` tokens, and none if
    shorter than :data:`MIN_SHARED_PREFIX`."""
    shared = common_prefix_length(sequences) if len(sequences) > 1 else 0
    shared = min(shared, keep)
    return shared if shared >= MIN_SHARED_PREFIX else 0


def packed_pass(
    b: HFRuntime,
    sequences: list[list[int]],
    shared: int,
    row_tokens: int = ROW_TOKENS,
    block_tokens: int | None = BLOCK_TOKENS,
) -> Packed:
    """Run the prefix tree of ``sequences`` (module docstring): as one sequence with block
    attention where the model takes it (:mod:`.tree_blocks`; not if ``block_tokens`` is None),
    the common prefix in it (a pass of its own would run a few tokens at a time, slowly); else
    the first ``shared`` tokens once as a cache, the nodes below packed in rows of
    ``row_tokens``."""
    model, device = b.model, b.device
    if block_tokens and takes_blocks(model):
        tree = build_tree(sequences, 0)
        order = depth_first(tree.children, tree.tops)
        plan = block_plan(tree.parents, order, 0, block_tokens)
        hidden = model.base_model(
            input_ids=torch.tensor([[tree.tokens[n] for n in order]], device=device),
            position_ids=torch.tensor([[tree.depths[n] for n in order]], device=device),
            use_cache=False,
            **{PLAN: plan},
        )[0]
        return Packed(tree, {node: (0, i) for i, node in enumerate(order)}, hidden, 0)
    tree = build_tree(sequences, shared)
    cache = _prefix_cache(b, sequences[0][:shared])
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
    if cache is not None:
        cache.reorder_cache(torch.zeros(len(rows), dtype=torch.long, device=device))
    hidden = model.base_model(
        input_ids=ids.to(device),
        attention_mask=_additive(allowed, model.dtype).to(device),
        position_ids=positions.to(device),
        past_key_values=cache,
        use_cache=cache is not None,
    )[0]
    return Packed(tree, where, hidden, shared)


def _prefix_cache(b: HFRuntime, prefix: list[int]):
    """The key/value cache of the batch's common prefix (None if there is none)."""
    if not prefix:
        return None
    ids = torch.tensor([prefix], device=b.device)
    return b.model.base_model(input_ids=ids, use_cache=True).past_key_values


def takes_blocks(model) -> bool:
    """Whether ``model`` runs biaslens's attention function, which takes a block plan."""
    return getattr(model.config, "_attn_implementation", None) == ATTENTION


def tree_logits(
    b: HFRuntime,
    prompts: list[list[int]],
    row_tokens: int = ROW_TOKENS,
    block_tokens: int | None = BLOCK_TOKENS,
):
    """(n, vocab) next-token logits after each prompt, over the packed prefix tree (module
    docstring); the vocabulary projection only at the prompts' last tokens."""
    shared = shared_length(prompts, min(len(p) for p in prompts) - 1)
    packed = packed_pass(b, prompts, shared, row_tokens, block_tokens)
    return b.model.get_output_embeddings()(packed.at(packed.tree.ends, b.device))


def tree_continuation_logprobs(
    b: HFRuntime,
    prompts: list[list[int]],
    continuations: list[list[int]],
    row_tokens: int = ROW_TOKENS,
    block_tokens: int | None = BLOCK_TOKENS,
) -> torch.Tensor:
    """log p(continuation | prompt) summed over its tokens, one value per pair (float64),
    over the packed tree of the prompt + continuation sequences: a prompt shared by several
    continuations, and any prefix shared by several prompts, runs once; the vocabulary
    projection only where a continuation token is read."""
    sequences = [p + c for p, c in zip(prompts, continuations, strict=True)]
    shared = shared_length(sequences, min(len(p) for p in prompts) - 1)
    packed = packed_pass(b, sequences, shared, row_tokens, block_tokens)
    tree, shared = packed.tree, packed.shared
    pairs, nodes, targets = [], [], []
    for i, (prompt, continuation) in enumerate(zip(prompts, continuations, strict=True)):
        chain, node = [], tree.ends[i]
        while node >= 0:
            chain.append(node)
            node = tree.parents[node]
        chain.reverse()  # the nodes at depths shared … len − 1
        for j, token in enumerate(continuation):
            pairs.append(i)
            nodes.append(chain[len(prompt) + j - 1 - shared])
            targets.append(token)
    distinct = list(dict.fromkeys(nodes))
    column = {node: k for k, node in enumerate(distinct)}
    head = b.model.get_output_embeddings()(packed.at(distinct, b.device)).float()
    logprobs = head.log_softmax(-1)
    rows = torch.tensor([column[n] for n in nodes], device=b.device)
    picked = logprobs[rows, torch.tensor(targets, device=b.device)].double()
    sums = torch.zeros(len(prompts), dtype=torch.float64, device=b.device)
    return sums.index_add(0, torch.tensor(pairs, device=b.device), picked)


def packs(b: HFRuntime, prompts: list[list[int]]) -> bool:
    """Whether ``b``'s model gives its plain logits over a packed prefix tree, compared with a
    plain forward of each of two prompts the first time it is asked (kept on ``b``)."""
    if b.packed_tree is None:

        def plain(sample: list[list[int]]) -> torch.Tensor:
            rows = [torch.tensor([p], device=b.device) for p in sample]
            return torch.cat([b.model(input_ids=row).logits[:, -1] for row in rows])

        b.packed_tree = tree_works(b, prompts, plain)
    return b.packed_tree


def _additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean attend/skip mask as the additive float mask transformers' attention takes."""
    mask = torch.zeros(allowed.shape, dtype=dtype)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def tree_works(b: HFRuntime, prompts: list[list[int]], reference) -> bool:
    """Whether the packed tree gives ``reference``'s logits (a plain way's) on two of
    ``prompts`` (the first and the last: two branches of one row, or of blocks of
    :data:`CHECK_BLOCK` queries, each of which must see its own ancestors only, at their
    depths), to :data:`AGREEMENT` in log-probability."""
    if len(prompts) < 2:
        return False
    sample = [prompts[0], prompts[-1]]
    try:
        longest = max(len(p) for p in sample)
        ours = tree_logits(b, sample, row_tokens=longest, block_tokens=CHECK_BLOCK)
    except Exception:  # an attention that refuses a 4-D mask or the index list
        return False
    theirs = reference(sample)
    gap = (ours.float().log_softmax(-1) - theirs.float().log_softmax(-1)).abs().max()
    return bool(gap <= AGREEMENT)
