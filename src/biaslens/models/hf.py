"""The transformers backend: masked, causal, seq2seq and extractive-QA models.

One place decides device, dtype and batch size. Every request type is answered in
length-sorted, dynamically padded batches under ``torch.inference_mode``; only the logits that
are read are computed (``logits_to_keep=1`` for next-token distributions, the MLM head applied
to the masked positions only).
"""

from __future__ import annotations

import hashlib
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from biaslens.decoding.stopping import apply_stop
from biaslens.errors import BiaslensError
from biaslens.models.base import LM, ModelIdentity, ModelKind, ProgressCallback
from biaslens.models.batching import BatchSizer, pad_sequences
from biaslens.models.requests import (
    MASK,
    AnswerSpanRequest,
    AnswerSpanResult,
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    ContrastiveGenerateRequest,
    ContrastiveGenerateResult,
    GenerateRequest,
    GenerateResult,
    SpanScoresRequest,
    SpanScoresResult,
    TokenDistributionRequest,
    TokenDistributionResult,
)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MIN_SHARED_PREFIX = 8
"""Prompts of a batch that share at least this many leading tokens reuse one prefix pass."""

DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


@dataclass(frozen=True)
class BackendConfig:
    """Backend options in one object (device, dtype, batch size, BOS handling).

    ``add_bos``: None keeps the tokenizer's own special tokens (what transformers users get);
    True prepends the BOS token to causal prompts when missing; False adds no special token.
    SmolLM2's BOS is the chat-turn marker ``<|im_start|>``: prepending it to a raw prompt makes
    the instruct model end the turn at once (greedy output ``<|im_end|>``), so None is the
    default.
    """

    device: str = "auto"
    dtype: str = "auto"
    batch_size: int | str = "auto"
    add_bos: bool | None = None


def resolve_device(device: str) -> torch.device:
    """``auto`` picks cuda, then mps, then cpu."""
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise BiaslensError(
            f"unknown device {device!r} (use auto, cpu, cuda, cuda:N or mps)"
        ) from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise BiaslensError(f"device {device!r} requested but CUDA is not available")
    return resolved


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` is bfloat16 on a GPU that supports it, float32 otherwise."""
    if dtype == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    if dtype not in DTYPES:
        raise BiaslensError(f"unknown dtype {dtype!r} (use auto, {', '.join(DTYPES)})")
    resolved = DTYPES[dtype]
    if device.type == "cpu" and resolved != torch.float32 and not _cpu_has_bf16_units():
        warnings.warn(
            f"dtype {dtype} on a CPU without bf16/fp16 matrix units (no AVX512-BF16/AMX) is much "
            "slower than float32",
            stacklevel=2,
        )
    return resolved


def _cpu_has_bf16_units() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True  # cannot tell (macOS, Windows): do not warn
    return any(flag in flags for flag in ("avx512_bf16", "amx_bf16"))


def detect_kind(config) -> ModelKind:
    """Infer the model kind from the config's ``architectures`` (set by ``save_pretrained``)."""
    architectures = list(getattr(config, "architectures", None) or [])
    for arch in architectures:
        if arch.endswith("ForMaskedLM"):
            return ModelKind.MASKED
        if arch.endswith("ForQuestionAnswering"):
            return ModelKind.EXTRACTIVE_QA
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return ModelKind.CAUSAL
        if arch.endswith("ForConditionalGeneration") and getattr(
            config, "is_encoder_decoder", False
        ):
            return ModelKind.SEQ2SEQ
    raise BiaslensError(
        f"cannot tell the model kind from architectures={architectures}; "
        "biaslens supports *ForMaskedLM, *ForCausalLM, *ForConditionalGeneration (encoder-decoder) "
        "and *ForQuestionAnswering models"
    )


def weights_sha256(path: Path) -> str:
    """sha256 over the weight files of a model folder (sorted by name)."""
    digest = hashlib.sha256()
    files = sorted(
        p for p in path.iterdir() if p.suffix in {".safetensors", ".bin", ".pt"} and p.is_file()
    )
    for file in files:
        digest.update(file.name.encode())
        with open(file, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 24), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _local_folder(name_or_path: str) -> Path | None:
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name_or_path, local_files_only=True))
    except Exception:
        return None


def load_hf(
    name_or_path: str,
    config: BackendConfig | None = None,
    display_name: str | None = None,
) -> HFBackend:
    """Load a model by hub name (from the local cache only when offline) or local path."""
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        AutoModelForQuestionAnswering,
        AutoModelForSeq2SeqLM,
        AutoTokenizer,
    )
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    config = config or BackendConfig()
    folder = _local_folder(name_or_path)
    if folder is None:
        raise BiaslensError(
            f"unknown model {name_or_path!r}: not a registered name (see `biaslens models list`), "
            "not a local folder, and not in the local Hugging Face cache"
        )
    try:
        model_config = AutoConfig.from_pretrained(folder)
    except (OSError, ValueError) as error:
        raise BiaslensError(f"cannot read a model config in {folder}: {error}") from None
    kind = detect_kind(model_config)
    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    auto_class = {
        ModelKind.MASKED: AutoModelForMaskedLM,
        ModelKind.CAUSAL: AutoModelForCausalLM,
        ModelKind.SEQ2SEQ: AutoModelForSeq2SeqLM,
        ModelKind.EXTRACTIVE_QA: AutoModelForQuestionAnswering,
    }[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = auto_class.from_pretrained(folder, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(folder)
    model.to(device).eval()
    identity = ModelIdentity(
        name=display_name or name_or_path,
        kind=kind,
        weights_sha256=weights_sha256(folder),
        num_parameters=sum(p.numel() for p in model.parameters()),
    )
    return HFBackend(model, tokenizer, identity, config)


class HFBackend(LM):
    """Answers the four request types with a transformers model and its tokenizer."""

    def __init__(self, model, tokenizer, identity: ModelIdentity, config: BackendConfig) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.identity = identity
        self.config = config
        self.device = next(model.parameters()).device
        self.sizer = BatchSizer(config.batch_size)
        if tokenizer.pad_token_id is None:
            # Causal tokenizers often have no pad token; padded positions are masked anyway.
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._decoded: dict[int, str] = {}
        self._cid = None

    def require(self, request_type: str) -> None:
        """Also checks, for masked LMs, that the tokenizer has a mask token."""
        super().require(request_type)
        if self.kind == ModelKind.MASKED:
            self._mask_token()

    # ------------------------------------------------------------------ tokenization helpers
    def _encode_prompts(self, texts: Sequence[str]) -> list[list[int]]:
        """Prompt ids (one batched tokenizer call): the tokenizer's own special tokens, or a
        forced / suppressed BOS for causal prompts (see ``BackendConfig.add_bos``)."""
        texts = list(texts)
        if not texts:
            return []
        if self.kind == ModelKind.SEQ2SEQ or self.config.add_bos is None:
            return self.tokenizer(texts)["input_ids"]
        encoded = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        bos = self.tokenizer.bos_token_id
        if not self.config.add_bos or bos is None:
            return encoded
        return [ids if ids and ids[0] == bos else [bos, *ids] for ids in encoded]

    def _encode_continuation(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _pad(self, sequences: list[list[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_sequences(sequences, self._pad_id, left, self.device)

    def _decode_token(self, token_id: int) -> str:
        text = self._decoded.get(token_id)
        if text is None:
            text = self._decoded[token_id] = self.tokenizer.decode([token_id])
        return text

    def _top_k(self, probs: torch.Tensor, k: int) -> tuple[list[list[str]], list[list[float]]]:
        k = min(k, probs.shape[-1])
        values, indices = probs.topk(k, dim=-1)
        tokens = [[self._decode_token(int(i)) for i in row] for row in indices.tolist()]
        return tokens, values.double().tolist()

    # ------------------------------------------------------------------ token_distribution
    def token_distribution(
        self, requests: Sequence[TokenDistributionRequest], progress: ProgressCallback | None = None
    ) -> list[TokenDistributionResult]:
        self.require("token_distribution")
        if self.kind == ModelKind.MASKED:
            return self._masked_distribution(requests, progress)
        return self._next_token_distribution(requests, progress)

    def _mask_token(self) -> str:
        mask = self.tokenizer.mask_token
        if mask is None:
            raise BiaslensError(
                f"model {self.identity.name!r} is a masked LM but its tokenizer has no mask token"
            )
        return mask

    def _masked_target_ids(
        self, requests: Sequence[TokenDistributionRequest]
    ) -> list[list[int | None]]:
        """Token id of each target in its slot, or None when it is not one known token there.

        A target is checked in context: the text with the target in place of the mask must
        tokenize to the same tokens as the masked text except at the slot. Pre-tokenizers split
        on whitespace and punctuation, so the outcome depends only on the characters next to
        the slot; it is computed once per (character before, character after, target) on the
        first text with that frame and reused for the others.
        """
        mask = self._mask_token()
        for request in requests:
            if request.text.count(MASK) != 1:
                raise BiaslensError(
                    f"a masked-LM request must contain {MASK} exactly once: {request.text!r}"
                )

        def frame(text: str) -> tuple[str, str]:
            before, after = text.split(MASK)
            return before[-1:], after[:1]

        probes: dict[tuple[str, str, str], str] = {}
        for r in requests:
            for target in r.targets:
                probes.setdefault((*frame(r.text), target), r.text)
        keys = list(probes)
        masked = self.tokenizer([probes[k].replace(MASK, mask) for k in keys])["input_ids"]
        filled = self.tokenizer([probes[k].replace(MASK, k[2]) for k in keys])["input_ids"]
        target_id: dict[tuple[str, str, str], int | None] = {}
        for key, reference, ids in zip(keys, masked, filled, strict=True):
            position = reference.index(self.tokenizer.mask_token_id)
            same_frame = len(ids) == len(reference) and all(
                a == b for i, (a, b) in enumerate(zip(ids, reference, strict=True)) if i != position
            )
            known = same_frame and ids[position] != self.tokenizer.unk_token_id
            target_id[key] = ids[position] if known else None
        not_single = sorted({k[2] for k, i in target_id.items() if i is None})
        if not_single:
            warnings.warn(
                f"{self.identity.name}: these target words are not single (known) tokens for this "
                f"tokenizer and get probability NaN: {', '.join(map(repr, not_single))}",
                stacklevel=3,
            )
        return [[target_id[(*frame(r.text), t)] for t in r.targets] for r in requests]

    def _mlm_head(self):
        for name in ("cls", "lm_head", "predictions"):
            head = getattr(self.model, name, None)
            if isinstance(head, torch.nn.Module):
                return head
        return None

    def _masked_distribution(self, requests, progress):
        mask = self._mask_token()
        target_ids = self._masked_target_ids(requests)
        encoded = self.tokenizer([r.text.replace(MASK, mask) for r in requests])["input_ids"]
        items = list(range(len(requests)))
        head = self._mlm_head()

        def run(batch: list[int]) -> list[TokenDistributionResult]:
            ids, attention = self._pad([encoded[i] for i in batch], left=False)
            slot = (ids == self.tokenizer.mask_token_id).nonzero()
            with torch.inference_mode():
                if head is not None:
                    hidden = self.model.base_model(input_ids=ids, attention_mask=attention)[0]
                    logits = head(hidden[slot[:, 0], slot[:, 1]])
                else:
                    logits = self.model(input_ids=ids, attention_mask=attention).logits
                    logits = logits[slot[:, 0], slot[:, 1]]
                probs = logits.float().softmax(-1)
            return self._distribution_results(
                probs, [requests[i] for i in batch], [target_ids[i] for i in batch]
            )

        return self.sizer.run(items, [len(e) for e in encoded], run, progress)

    def _distribution_results(self, probs, requests, target_ids) -> list[TokenDistributionResult]:
        k = max(r.top_k for r in requests)
        tokens, values = self._top_k(probs, k)
        probs64 = probs.double().cpu()
        results = []
        for row, (request, ids) in enumerate(zip(requests, target_ids, strict=True)):
            target_probs = tuple(float(probs64[row, i]) if i is not None else math.nan for i in ids)
            results.append(
                TokenDistributionResult(
                    target_probs=target_probs,
                    target_ids=tuple((i,) if i is not None else () for i in ids),
                    top_tokens=tuple(tokens[row][: request.top_k]),
                    top_probs=tuple(values[row][: request.top_k]),
                )
            )
        return results

    def _next_token_logits(self, prompts: list[list[int]]) -> torch.Tensor:
        """Logits of the next token after each prompt (causal) or the first decoder token
        (seq2seq), one row per prompt."""
        if self.kind == ModelKind.CAUSAL:
            shared = _common_prefix_length(prompts)
            if shared >= MIN_SHARED_PREFIX and len(prompts) > 1:
                return self._causal_logits_with_shared_prefix(prompts, shared)
            ids, attention = self._pad(prompts, left=True)
            positions = (attention.cumsum(-1) - 1).clamp(min=0)
            out = self.model(
                input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=1
            )
            return out.logits[:, -1]
        ids, attention = self._pad(prompts, left=False)
        start = self.model.config.decoder_start_token_id
        decoder = torch.full((len(prompts), 1), start, dtype=torch.long, device=self.device)
        out = self.model(input_ids=ids, attention_mask=attention, decoder_input_ids=decoder)
        return out.logits[:, -1]

    def _causal_logits_with_shared_prefix(self, prompts: list[list[int]], shared: int):
        """Run the prompts' common token prefix once, then all suffixes against its KV cache.

        MGC prompts share a long instruction (prompt A: ~25 of ~35 tokens), so this removes
        most of the work. Suffixes are left-padded *after* the prefix; the attention mask hides
        the padding and position ids continue from the prefix, so results equal a plain
        forward pass of each prompt.
        """
        prefix = torch.tensor([prompts[0][:shared]], device=self.device)
        cache = self.model(input_ids=prefix, use_cache=True).past_key_values
        cache.batch_repeat_interleave(len(prompts))
        suffix, suffix_mask = self._pad([p[shared:] for p in prompts], left=True)
        attention = torch.cat(
            [torch.ones((len(prompts), shared), dtype=torch.long, device=self.device), suffix_mask],
            dim=1,
        )
        positions = (attention.cumsum(-1) - 1)[:, shared:].clamp(min=0)
        out = self.model(
            input_ids=suffix,
            attention_mask=attention,
            position_ids=positions,
            past_key_values=cache,
            logits_to_keep=1,
        )
        return out.logits[:, -1]

    def _next_token_distribution(self, requests, progress):
        encoded = self._encode_prompts([r.text for r in requests])
        target_tokens = {t: self._encode_continuation(t) for r in requests for t in r.targets}
        empty = sorted(t for t, ids in target_tokens.items() if not ids)
        if empty:
            raise BiaslensError(f"target words that tokenize to nothing: {empty}")

        def run(batch: list[int]) -> list[TokenDistributionResult]:
            with torch.inference_mode():
                probs = self._next_token_logits([encoded[i] for i in batch]).float().softmax(-1)
            single = [
                [
                    ids[0] if len(ids) == 1 else None
                    for ids in map(target_tokens.get, requests[i].targets)
                ]
                for i in batch
            ]
            return self._distribution_results(probs, [requests[i] for i in batch], single)

        results = self.sizer.run(
            list(range(len(requests))), [len(e) for e in encoded], run, progress
        )
        return self._fill_multi_token_targets(requests, results, target_tokens)

    def _fill_multi_token_targets(self, requests, results, target_tokens):
        """Exact chain-rule probabilities for targets of several tokens (one extra batched
        ``choice_logprobs`` call over all of them)."""
        multi = [
            (row, col)
            for row, r in enumerate(requests)
            for col, t in enumerate(r.targets)
            if len(target_tokens[t]) > 1
        ]
        if not multi:
            return results
        scored = self.choice_logprobs(
            [
                ChoiceLogprobsRequest(requests[row].text, (requests[row].targets[col],))
                for row, col in multi
            ]
        )
        patched = [list(r.target_probs) for r in results]
        patched_ids = [list(r.target_ids) for r in results]
        for (row, col), score in zip(multi, scored, strict=True):
            patched[row][col] = math.exp(score.logprobs[0])
            patched_ids[row][col] = tuple(target_tokens[requests[row].targets[col]])
        return [
            TokenDistributionResult(tuple(p), tuple(i), r.top_tokens, r.top_probs)
            for p, i, r in zip(patched, patched_ids, results, strict=True)
        ]

    # ------------------------------------------------------------------ choice_logprobs
    def choice_logprobs(
        self, requests: Sequence[ChoiceLogprobsRequest], progress: ProgressCallback | None = None
    ) -> list[ChoiceLogprobsResult]:
        self.require("choice_logprobs")
        prompts, choices = self.encode_choice_requests(requests)
        # one item per request: its choices share the prompt's forward pass (causal models)
        items = list(range(len(requests)))
        lengths = [len(prompts[i]) + sum(len(c) for c in choices[i]) for i in items]

        def run(batch: list[int]) -> list[ChoiceLogprobsResult]:
            flat_prompts = [prompts[i] for i in batch for _ in choices[i]]
            flat_choices = [c for i in batch for c in choices[i]]
            with torch.inference_mode():
                sums = self.continuation_logprobs(flat_prompts, flat_choices).tolist()
            results, cursor = [], 0
            for i in batch:
                n = len(choices[i])
                chunk = sums[cursor : cursor + n]
                cursor += n
                results.append(
                    ChoiceLogprobsResult(tuple(chunk), tuple(len(c) for c in choices[i]))
                )
            return results

        return self.sizer.run(items, lengths, run, progress)

    def encode_choice_requests(
        self, requests: Sequence[ChoiceLogprobsRequest]
    ) -> tuple[list[list[int]], list[list[list[int]]]]:
        """Prompt ids and, per request, the ids of each choice (an empty choice is an error)."""
        prompts = self._encode_prompts([r.prompt for r in requests])
        choices = [[self._encode_continuation(c) for c in r.choices] for r in requests]
        if any(not c for row in choices for c in row):
            raise BiaslensError("a choice tokenizes to nothing; choices must be non-empty text")
        return prompts, choices

    def continuation_logprobs(
        self, prompts: list[list[int]], continuations: list[list[int]]
    ) -> torch.Tensor:
        """log p(continuation | prompt) summed over its tokens, one value per pair (float64).

        Differentiable: callers decide on ``inference_mode`` (scoring) or gradients (training).
        """
        if self.kind == ModelKind.CAUSAL:
            return self._causal_continuation_logprobs(prompts, continuations)
        ids, attention = self._pad(prompts, left=False)
        labels, label_mask = self._pad(continuations, left=False)
        start = self.model.config.decoder_start_token_id
        decoder = torch.cat(
            [
                torch.full((len(prompts), 1), start, device=self.device, dtype=torch.long),
                labels[:, :-1],
            ],
            1,
        )
        logits = self.model(
            input_ids=ids, attention_mask=attention, decoder_input_ids=decoder
        ).logits
        token_logprobs = logits.float().log_softmax(-1).gather(-1, labels[..., None])[..., 0]
        return (token_logprobs.double() * label_mask).sum(-1)

    def _causal_continuation_logprobs(
        self, prompts: list[list[int]], continuations: list[list[int]]
    ) -> torch.Tensor:
        """Causal scoring with each distinct prompt run once: the prompts (left-padded) give a
        KV cache and the distribution of every continuation's first token; the cache is
        repeated for each continuation, whose remaining tokens are scored in a second pass."""
        distinct: dict[tuple[int, ...], int] = {}
        owner = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
        ids, mask = self._pad([list(p) for p in distinct], left=True)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True)
        rows = torch.tensor(owner, device=self.device)
        first = torch.tensor([c[0] for c in continuations], device=self.device)
        last = out.logits[:, -1].float().log_softmax(-1)
        sums = last[rows, first].double()
        rest = [c[:-1] for c in continuations]
        if max(len(r) for r in rest) == 0:
            return sums
        cache = out.past_key_values
        cache.reorder_cache(rows)
        rest_ids, rest_mask = self._pad([r or [self._pad_id] for r in rest], left=False)
        rest_mask = rest_mask * torch.tensor(
            [[1 if r else 0] for r in rest], device=self.device, dtype=rest_mask.dtype
        )
        lengths = mask.sum(-1)[rows]
        rest_positions = lengths[:, None] + torch.arange(rest_ids.shape[1], device=self.device)
        logits = self.model(
            input_ids=rest_ids,
            attention_mask=torch.cat([mask[rows], rest_mask], 1),
            position_ids=rest_positions,
            past_key_values=cache,
            use_cache=True,
        ).logits
        which, step, target = [], [], []
        for row, choice in enumerate(continuations):
            for j in range(1, len(choice)):
                which.append(row)
                step.append(j - 1)
                target.append(choice[j])
        if not which:
            return sums
        which = torch.tensor(which, device=self.device)
        picked = logits[which, torch.tensor(step, device=self.device)].float().log_softmax(-1)
        picked = picked.gather(-1, torch.tensor(target, device=self.device)[:, None])[:, 0]
        return sums.index_add(0, which, picked.double())

    # ------------------------------------------------------------------ generate
    def generate(
        self, requests: Sequence[GenerateRequest], progress: ProgressCallback | None = None
    ) -> list[GenerateResult]:
        self.require("generate")
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):
            if r.max_new_tokens < 1:
                raise BiaslensError(f"max_new_tokens must be >= 1, got {r.max_new_tokens}")
            groups.setdefault((r.max_new_tokens, r.top_k), []).append(i)
        results: list[GenerateResult | None] = [None] * len(requests)
        for (max_new, top_k), index in groups.items():
            encoded = self._encode_prompts([requests[i].prompt for i in index])

            def run(batch: list[int], max_new=max_new, top_k=top_k, encoded=encoded, index=index):
                return self._generate_batch(
                    [encoded[j] for j in batch], [requests[index[j]] for j in batch], max_new, top_k
                )

            out = self.sizer.run(list(range(len(index))), [len(e) for e in encoded], run, progress)
            for j, result in enumerate(out):
                results[index[j]] = result
        return results  # type: ignore[return-value]

    def _generate_batch(self, prompts, requests, max_new_tokens, top_k) -> list[GenerateResult]:
        left = self.kind == ModelKind.CAUSAL
        ids, attention = self._pad(prompts, left=left)
        eos = self.tokenizer.eos_token_id
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=attention,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=self._pad_id,
                eos_token_id=eos,
            )
        generated = out.sequences[:, ids.shape[1] :] if left else out.sequences[:, 1:]
        step_probs = torch.stack(out.logits, 1).float().softmax(-1)  # (batch, steps, vocab)
        results = []
        for row, request in enumerate(requests):
            tokens = generated[row].tolist()
            steps = len(tokens)
            if eos is not None and eos in tokens:
                steps = tokens.index(eos) + 1
            top_tokens, top_values = self._top_k(step_probs[row, :steps], top_k)
            pieces = [self._decode_token(t) for t in tokens[:steps]]
            text = self.tokenizer.decode(tokens[:steps], skip_special_tokens=True)
            steps, text = apply_stop(request.stop, pieces, text)
            results.append(
                GenerateResult(
                    text=text,
                    tokens=tuple(pieces[:steps]),
                    step_top_tokens=tuple(tuple(t) for t in top_tokens[:steps]),
                    step_top_probs=tuple(tuple(v) for v in top_values[:steps]),
                )
            )
        return results

    # ------------------------------------------------------------------ contrastive_generate
    def contrastive_generate(
        self,
        requests: Sequence[ContrastiveGenerateRequest],
        progress: ProgressCallback | None = None,
    ) -> list[ContrastiveGenerateResult]:
        """CID for many (x, x', λ) triples: x and x' are two rows of one batch sharing a KV
        cache, triples are batched together (``batch_size`` counts triples)."""
        from biaslens.decoding.cid import ContrastiveDecoder

        self.require("contrastive_generate")
        if self._cid is None:
            self._cid = ContrastiveDecoder(self.model, self.tokenizer)
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            if not r.x.strip() or not r.x_prime.strip():
                raise BiaslensError(f"request {i}: x and x' must be non-empty text")
            options = (r.max_new_tokens, r.top_k, tuple(r.stop), r.do_sample, r.temperature)
            groups.setdefault(options, []).append(i)
        texts = list(dict.fromkeys(t for r in requests for t in (r.x, r.x_prime)))
        encoded = dict(zip(texts, self._encode_prompts(texts), strict=True))
        results: list[ContrastiveGenerateResult | None] = [None] * len(requests)
        for (max_new, top_k, stop, do_sample, temperature), index in groups.items():

            def run(
                batch, max_new=max_new, top_k=top_k, stop=stop, sample=do_sample, t=temperature
            ):
                chosen = [requests[i] for i in batch]
                outputs = self._cid.decode(
                    [encoded[r.x] for r in chosen],
                    [encoded[r.x_prime] for r in chosen],
                    [r.lam for r in chosen],
                    top_k=top_k,
                    max_new_tokens=max_new,
                    stop=stop,
                    do_sample=sample,
                    temperature=t,
                    seeds=[r.seed for r in chosen],
                )
                return [
                    ContrastiveGenerateResult(o.text, len(o.token_ids), o.finish_reason)
                    for o in outputs
                ]

            lengths = [
                max(len(encoded[requests[i].x]), len(encoded[requests[i].x_prime])) for i in index
            ]
            for i, result in zip(index, self.sizer.run(index, lengths, run, progress), strict=True):
                results[i] = result
        return results  # type: ignore[return-value]

    # ------------------------------------------------------------------ span_scores
    def _encode_question_context(self, question: str, context: str):
        """(question, context) with character offsets; long contexts are truncated."""
        max_length = min(getattr(self.tokenizer, "model_max_length", 512) or 512, 512)
        return self.tokenizer(
            question,
            context,
            return_offsets_mapping=True,
            truncation="only_second",
            max_length=max_length,
        )

    def encode_spans(
        self, question: str, context: str, spans: Sequence[tuple[int, int]]
    ) -> tuple[list[int], list[tuple[int, int] | None]]:
        """(question, context) ids and the first/last token of each character span of the
        context; None for a span the (possibly truncated) input does not hold."""
        encoding = self._encode_question_context(question, context)
        sequence_ids = encoding.sequence_ids()
        token_spans = [
            char_span_to_tokens(encoding["offset_mapping"], sequence_ids, span) for span in spans
        ]
        return encoding["input_ids"], token_spans

    def _start_end_probs(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Softmax over the start and over the end logits of each whole (unpadded) sequence."""
        with torch.inference_mode():
            start, end = self.start_end_logprobs(sequences)
        return start.exp().cpu(), end.exp().cpu()

    def start_end_logprobs(self, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-softmax over the start and the end logits of each sequence, padding masked out
        (-inf). Differentiable: callers decide on ``inference_mode`` or gradients."""
        ids, attention = self._pad(sequences, left=False)
        out = self.model(input_ids=ids, attention_mask=attention)
        mask = attention.bool()
        start = out.start_logits.float().masked_fill(~mask, -torch.inf).log_softmax(-1)
        end = out.end_logits.float().masked_fill(~mask, -torch.inf).log_softmax(-1)
        return start, end

    def span_scores(
        self, requests: Sequence[SpanScoresRequest], progress: ProgressCallback | None = None
    ) -> list[SpanScoresResult]:
        self.require("span_scores")
        encoded = []
        for r in requests:
            ids, token_spans = self.encode_spans(r.question, r.context, r.spans)
            if any(span is None for span in token_spans):
                raise BiaslensError(
                    "an answer span lies outside the (possibly truncated) context: "
                    f"{r.context[:80]!r}"
                )
            encoded.append((ids, token_spans))

        def run(batch: list[int]) -> list[SpanScoresResult]:
            start, end = self._start_end_probs([encoded[i][0] for i in batch])
            start, end = start.double(), end.double()
            results = []
            for row, i in enumerate(batch):
                spans = encoded[i][1]
                results.append(
                    SpanScoresResult(
                        tuple(float(start[row, a]) for a, _ in spans),
                        tuple(float(end[row, b]) for _, b in spans),
                    )
                )
            return results

        return self.sizer.run(
            list(range(len(requests))), [len(e[0]) for e in encoded], run, progress
        )

    def answer_span(
        self, requests: Sequence[AnswerSpanRequest], progress: ProgressCallback | None = None
    ) -> list[AnswerSpanResult]:
        self.require("answer_span")
        encoded = []
        for r in requests:
            enc = self._encode_question_context(r.question, r.context)
            in_context = [s == 1 for s in enc.sequence_ids()]
            encoded.append((enc["input_ids"], enc["offset_mapping"], in_context))

        def run(batch: list[int]) -> list[AnswerSpanResult]:
            start, end = self._start_end_probs([encoded[i][0] for i in batch])
            results = []
            for row, i in enumerate(batch):
                _, offsets, in_context = encoded[i]
                request = requests[i]
                allowed = torch.zeros(start.shape[1], dtype=torch.bool)
                allowed[: len(in_context)] = torch.tensor(in_context)
                ps = start[row].masked_fill(~allowed, 0)
                pe = end[row].masked_fill(~allowed, 0)
                joint = torch.triu(ps[:, None] * pe[None, :])
                joint = torch.tril(joint, diagonal=request.max_answer_tokens - 1)
                best = int(joint.argmax())
                a, b = divmod(best, joint.shape[1])
                char_start, char_end = offsets[a][0], offsets[b][1]
                results.append(
                    AnswerSpanResult(
                        request.context[char_start:char_end],
                        char_start,
                        char_end,
                        float(joint[a, b]),
                    )
                )
            return results

        return self.sizer.run(
            list(range(len(requests))), [len(e[0]) for e in encoded], run, progress
        )


def _common_prefix_length(sequences: list[list[int]]) -> int:
    """Length of the longest common prefix, leaving every sequence at least one own token."""
    shortest = min(len(s) for s in sequences)
    length = 0
    while length < shortest - 1 and all(s[length] == sequences[0][length] for s in sequences):
        length += 1
    return length


def char_span_to_tokens(offsets, sequence_ids, span) -> tuple[int, int] | None:
    """First and last context token covering the character span [start, end)."""
    start, end = span
    first = last = None
    for index, ((a, b), seq) in enumerate(zip(offsets, sequence_ids, strict=True)):
        if seq != 1 or a == b:
            continue
        if first is None and a <= start < b:
            first = index
        if a < end <= b:
            last = index
    if first is None or last is None:
        return None
    return first, last
