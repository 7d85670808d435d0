"""The state of a loaded transformers model and the helpers every job shares.

:class:`HFRuntime` is what the job modules (:mod:`.scoring`, :mod:`.generation`,
:mod:`.extractive`, :mod:`.prefix`, :mod:`.forward`) work with; the backend
(:mod:`.backend`) only says which job answers which request type.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import torch

from biaslens.common.tokens import pad_sequences
from biaslens.errors import BiaslensError
from biaslens.models.base import ModelIdentity, ModelKind, ProgressCallback
from biaslens.models.config import BackendConfig
from biaslens.models.requests import RequestType
from biaslens.models.runtime.batching import (
    AUTO_MAX_SIZE,
    AUTO_MAX_SIZE_CPU,
    BatchSizeMemo,
    BatchSizer,
    Warmth,
)
from biaslens.models.runtime.tokenization import LocalTokenizer, encode_causal_prompts

POSITION_OFFSET_MODELS = {"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"}
"""Models whose position ids start after the padding index (usable length = positions − pad − 1)."""


T = TypeVar("T")
R = TypeVar("R")
SENTINEL = "<extra_id_0>"
"""The first span sentinel of T5-style denoisers (T5, UL2)."""


def fill_style(model, tokenizer) -> str:
    """How a model used as a masked LM fills its slot: ``encoder`` (BERT-style MLM head),
    ``reconstruct`` (BART-style: the decoder rewrites the input, so its output at the slot's
    position predicts the slot) or ``sentinel`` (T5/UL2 span denoising: the decoder writes
    ``<extra_id_0>`` then the slot's text)."""
    if not getattr(model.config, "is_encoder_decoder", False):
        return "encoder"
    if tokenizer.mask_token is not None:
        return "reconstruct"
    sentinel = tokenizer.convert_tokens_to_ids(SENTINEL)
    if sentinel is None or sentinel == tokenizer.unk_token_id:
        raise BiaslensError(
            "this encoder-decoder model has neither a mask token nor span sentinels "
            f"({SENTINEL}); it cannot fill a masked slot (use --model-kind seq2seq)"
        )
    return "sentinel"


def device_description(device: torch.device) -> str:
    """The device's model and, for a CPU, the threads torch uses (what decides the best batch
    size), e.g. ``NVIDIA H100 80GB HBM3`` or ``AMD EPYC 7B13 x2``."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type != "cpu":
        return device.type

    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name} x{torch.get_num_threads()}"


def context_limit(model, tokenizer) -> int | None:
    """The most tokens one input may have: the model's position table and the tokenizer's
    ``model_max_length`` (when set), whichever is smaller; None when neither says."""
    config = model.config
    limits = []
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "n_ctx"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            if name == "max_position_embeddings" and config.model_type in POSITION_OFFSET_MODELS:
                value -= (getattr(config, "pad_token_id", None) or 0) + 1
            limits.append(value)
            break
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and 0 < declared < 1_000_000:
        limits.append(declared)
    return min(limits) if limits else None


class HFRuntime(LocalTokenizer):
    """A loaded model at work: the model, its tokenizer, device, padding, context limit, batch
    sizers and the helpers every job shares (prompt encoding, padding, top-k decoding). The job
    modules take one; :class:`~.backend.HFBackend` is the LM built on it."""

    def __init__(self, model, tokenizer, identity: ModelIdentity, config: BackendConfig) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.identity = identity
        self.config = config
        self.device = next(model.parameters()).device
        self.sizers: dict[RequestType, BatchSizer] = {}
        self.warmth = Warmth()
        """Whether this model has run a batch (its sizers then time from their first)."""
        if tokenizer.pad_token_id is None:
            # Causal tokenizers often have no pad token; padded positions are masked anyway.
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.max_length = context_limit(model, tokenizer)
        self._decoded: dict[int, str] = {}
        self.contrastive_decoder = None  # built on the first contrastive request
        self.packed_tree: bool | None = None
        """Whether the packed prefix tree gives this model's plain logits (:mod:`.tree`),
        checked the first time a causal batch is scored."""
        self.fill_style = fill_style(model, tokenizer) if self.kind == ModelKind.MASKED else None

    @property
    def kind(self) -> ModelKind:
        return self.identity.kind

    # ------------------------------------------------------------------ shared helpers
    def batched(
        self,
        request_type: RequestType,
        items: Sequence[T],
        lengths: Sequence[int],
        run: Callable[[list[T]], list[R]],
        progress: ProgressCallback | None,
        keys: Sequence | None = None,
        keys_first: bool = False,
    ) -> list[R]:
        """Run ``run`` over length-sorted batches of ``items`` (results in input order);
        ``keys`` order items of one length (token ids: prompts that share prefixes meet), or
        all items when ``keys_first`` (see :meth:`BatchSizer.run`)."""
        return self.sizer(request_type).run(items, lengths, run, progress, keys, keys_first)

    def sizer(self, request_type: RequestType) -> BatchSizer:
        """The batch sizer of one request type (``auto`` sizes are measured per type and
        remembered per model, device and dtype)."""
        if request_type not in self.sizers:
            dtype = str(next(self.model.parameters()).dtype).removeprefix("torch.")
            key = "|".join(
                (
                    self.identity.fingerprint[:16],
                    device_description(self.device),
                    dtype,
                    request_type.value,
                )
            )
            memo = BatchSizeMemo() if self.config.options.batch_size == "auto" else None
            limit = AUTO_MAX_SIZE_CPU if self.device.type == "cpu" else AUTO_MAX_SIZE
            self.sizers[request_type] = BatchSizer(
                self.config.options.batch_size, memo, key, max_size=limit, warmth=self.warmth
            )
        return self.sizers[request_type]

    def mask_token(self) -> str:
        """The token that marks the slot: the tokenizer's mask token, or a span denoiser's
        first sentinel."""
        if self.fill_style == "sentinel":
            return SENTINEL
        mask = self.tokenizer.mask_token
        if mask is None:
            raise BiaslensError(
                f"model {self.identity.name!r} is used as a masked LM but its tokenizer has "
                f"neither a mask token nor the {SENTINEL} sentinel"
            )
        return mask

    def with_prefix(self, texts: Sequence[str]) -> list[str]:
        """``texts`` with the configured input prefix (e.g. UL2's ``[NLU] ``) in front."""
        prefix = self.config.options.input_prefix
        return [prefix + t for t in texts] if prefix else list(texts)

    def encode_prompts(self, texts: Sequence[str]) -> list[list[int]]:
        """Prompt ids (one batched tokenizer call): the tokenizer's own special tokens, or a
        forced / suppressed BOS for causal prompts (the ``add_bos`` option)."""
        add_bos = None if self.kind == ModelKind.SEQ2SEQ else self.config.options.add_bos
        chat = self.config.options if self.kind == ModelKind.CAUSAL else None
        return encode_causal_prompts(self.tokenizer, self.with_prefix(texts), add_bos, chat)

    def pad(self, sequences: list[list[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_sequences(sequences, self.pad_id, left, self.device)

    def top_k(self, probs: torch.Tensor, k: int) -> tuple[list[list[str]], list[list[float]]]:
        k = min(k, probs.shape[-1])
        values, indices = probs.topk(k, dim=-1)
        tokens = [[self.decode_token(int(i)) for i in row] for row in indices.tolist()]
        return tokens, values.double().tolist()

    def check_fits(self, sequences: list[list[int]], texts: Sequence[str], request_type) -> None:
        """Refuse inputs longer than the model's context (where cutting them would change the
        question asked, e.g. a masked slot)."""
        if self.max_length is None:
            return
        for ids, text in zip(sequences, texts, strict=True):
            if len(ids) > self.max_length:
                raise BiaslensError(
                    f"{request_type.value}: an input of {len(ids)} tokens is longer than the "
                    f"{self.identity.name} context of {self.max_length} tokens: {text[:80]!r}…"
                )
