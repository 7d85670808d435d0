"""Contrastive Input Decoding (CID; Yona et al., 2023, Section 3 and Appendix B).

Given an input x and a contrastive input x', CID decodes from

    p̃(w) ∝ exp(λ · Δ(w)) · p(w | x, y<i),   Δ(w) = p(w | x, y<i) − p(w | x', y<i),

restricted to the top-K tokens of p(·| x, y<i) (K = 50 in the paper). Every generated token is
appended to *both* contexts, so the two contexts only ever differ the way x and x' differ.
λ = 0 is plain decoding.

The decoder here runs x and x' as two rows of one batch sharing one KV cache, and many
(x, x', λ) triples in the same batch: one forward pass per step for all of them, instead of the
two sequential forwards per step and example of an unbatched classifier-free-guidance loop.
Each distinct prompt is encoded once (a λ grid repeats the same x and x') and its cache rows are
copied; triples that finish are dropped from the batch. Works with any transformers causal or
encoder-decoder model; ``contrastive_generate`` is the library entry point.

The scoring pieces are small composable callables in the spirit of transformers'
``LogitsProcessor``: :class:`TopKSupport` then :class:`ContrastiveInputScaling`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from biaslens.common.contrastive_defaults import (
    MAX_NEW_TOKENS,
    TOP_K,
    lambda_problem,
    temperature_problem,
)
from biaslens.common.stopping import apply_stop, contains_stop
from biaslens.common.tokens import pad_sequences
from biaslens.errors import BiaslensError

FINISH_EOS = "eos"
FINISH_STOP = "stop"
FINISH_LENGTH = "length"


@dataclass(frozen=True)
class CIDOutput:
    """One contrastive continuation of x (contrasted with x').

    ``token_ids`` are the generated ids (EOS included when it ended the text); ``text`` is their
    decoding without special tokens, cut before a stop string; ``finish_reason`` is ``"eos"``,
    ``"stop"`` or ``"length"``.
    """

    text: str
    token_ids: tuple[int, ...]
    finish_reason: str


class TopKSupport:
    """Keep the ``k`` most likely tokens under x; every other token gets score −inf.

    The paper restricts the probability mass to the top-K tokens before applying CID
    (Appendix B), so a token that is unlikely given x can never be chosen because it is even
    less likely given x'.
    """

    def __init__(self, k: int) -> None:
        if not isinstance(k, int) or k < 1:
            raise BiaslensError(f"top_k must be an integer >= 1, got {k!r}")
        self.k = k

    def __call__(self, logprobs_x: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        k = min(self.k, logprobs_x.shape[-1])
        kth = logprobs_x.topk(k, dim=-1).values[..., -1:]
        return scores.masked_fill(logprobs_x < kth, -torch.inf)


class ContrastiveInputScaling:
    """log p̃(w) = λ · (p(w|x) − p(w|x')) + log p(w|x)  (Eq. 1 with a(v) = exp(λ·v)).

    ``lam`` is one value per row. Probabilities (not log-probabilities) enter Δ, so Δ ∈ [−1, 1]
    as in the paper; they are the model's full-vocabulary probabilities.
    """

    def __init__(self, lam: torch.Tensor) -> None:
        self.lam = lam

    def __call__(self, logprobs_x: torch.Tensor, logprobs_x_prime: torch.Tensor) -> torch.Tensor:
        delta = logprobs_x.exp() - logprobs_x_prime.exp()
        return self.lam.to(logprobs_x.dtype)[:, None] * delta + logprobs_x


def contrastive_scores(
    logprobs_x: torch.Tensor, logprobs_x_prime: torch.Tensor, lam: torch.Tensor, top_k: int
) -> torch.Tensor:
    """Unnormalised log p̃ for each row; −inf outside the top-K of p(·|x)."""
    scores = ContrastiveInputScaling(lam)(logprobs_x, logprobs_x_prime)
    return TopKSupport(top_k)(logprobs_x, scores)


def check_lambda(lam: float) -> float:
    value = float(lam)
    if (problem := lambda_problem(value)) is not None:  # also NaN
        raise BiaslensError(problem)
    return value


class ContrastiveDecoder:
    """Batched CID for one transformers model and its tokenizer (see the module docstring)."""

    def __init__(self, model, tokenizer, eos_token_ids: Sequence[int] | None = None) -> None:
        can_generate = getattr(model, "can_generate", None)
        if can_generate is None or not can_generate():
            name = type(model).__name__
            raise BiaslensError(
                f"{name} cannot generate text: CID needs a causal or encoder-decoder LM"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.encoder_decoder = bool(getattr(model.config, "is_encoder_decoder", False))
        self.device = next(model.parameters()).device
        self.eos_token_ids = set(eos_token_ids) if eos_token_ids is not None else _eos_ids(model)
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        self.pad_token_id = pad
        parameters = inspect.signature(model.forward).parameters
        self._keep_arg = "logits_to_keep" in parameters
        self._position_arg = "position_ids" in parameters

    # ------------------------------------------------------------------ public
    def decode(
        self,
        xs: Sequence[Sequence[int]],
        x_primes: Sequence[Sequence[int]],
        lams: Sequence[float],
        *,
        top_k: int = TOP_K,
        max_new_tokens: int = MAX_NEW_TOKENS,
        stop: Sequence[str] = (),
        do_sample: bool = False,
        temperature: float = 1.0,
        seeds: Sequence[int] | None = None,
    ) -> list[CIDOutput]:
        """Decode every triple (xs[i], x_primes[i], lams[i]) in one batch; token-id inputs."""
        if not (len(xs) == len(x_primes) == len(lams)):
            raise BiaslensError("xs, x_primes and lams must have the same length")
        if max_new_tokens < 1:
            raise BiaslensError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if do_sample and (problem := temperature_problem(temperature)) is not None:
            raise BiaslensError(problem)
        TopKSupport(top_k)
        lam = torch.tensor([check_lambda(v) for v in lams], dtype=torch.float32)
        for i, (x, xp) in enumerate(zip(xs, x_primes, strict=True)):
            if len(x) == 0 or len(xp) == 0:
                raise BiaslensError(f"triple {i}: x and x' must be non-empty")
        if not xs:
            return []
        generators = None
        if do_sample:
            seeds = list(seeds) if seeds is not None else [0] * len(xs)
            generators = [torch.Generator(self.device).manual_seed(int(s)) for s in seeds]
        with torch.inference_mode():
            steps = self._run(
                [list(x) for x in xs],
                [list(x) for x in x_primes],
                lam.to(self.device),
                top_k=top_k,
                max_new_tokens=max_new_tokens,
                stop=tuple(stop),
                temperature=temperature if do_sample else None,
                generators=generators,
            )
        return [self._output(ids, reason, stop) for ids, reason in steps]

    # ------------------------------------------------------------------ decoding loop
    def _run(self, xs, x_primes, lam, *, top_k, max_new_tokens, stop, temperature, generators):
        n = len(xs)
        # Rows 2i and 2i+1 are x and x' of triple i; distinct prompts are encoded once.
        prompts: dict[tuple[int, ...], int] = {}
        rows = []
        for x, xp in zip(xs, x_primes, strict=True):
            rows.append(prompts.setdefault(tuple(x), len(prompts)))
            rows.append(prompts.setdefault(tuple(xp), len(prompts)))
        unique = [list(p) for p in prompts]
        row_index = torch.tensor(rows, device=self.device)
        state = self._start(unique, row_index)
        logits = state.pop("logits")

        active = torch.arange(n, device=self.device)
        generated: list[list[int]] = [[] for _ in range(n)]
        reasons = [FINISH_LENGTH] * n
        for step in range(max_new_tokens):
            logprobs = logits.float().log_softmax(-1)
            scores = contrastive_scores(logprobs[0::2], logprobs[1::2], lam[active], top_k)
            chosen = self._choose(scores, active, temperature, generators)
            keep = []
            for j, (triple, token) in enumerate(zip(active.tolist(), chosen.tolist(), strict=True)):
                generated[triple].append(token)
                if token in self.eos_token_ids:
                    reasons[triple] = FINISH_EOS
                elif stop and contains_stop(stop, self._text(generated[triple])):
                    reasons[triple] = FINISH_STOP
                else:
                    keep.append(j)
            if step == max_new_tokens - 1 or not keep:
                break
            if len(keep) < len(active):
                keep_t = torch.tensor(keep, device=self.device)
                active, chosen = active[keep_t], chosen[keep_t]
                pair_rows = torch.stack([2 * keep_t, 2 * keep_t + 1], 1).flatten()
                self._select(state, pair_rows)
            logits = self._step(state, chosen.repeat_interleave(2))
        return [(generated[i], reasons[i]) for i in range(n)]

    def _choose(self, scores, active, temperature, generators) -> torch.Tensor:
        if temperature is None:
            return scores.argmax(-1)
        probs = (scores / temperature).softmax(-1)
        picks = [
            torch.multinomial(probs[j], 1, generator=generators[i])
            for j, i in enumerate(active.tolist())
        ]
        return torch.cat(picks)

    # ------------------------------------------------------------------ model plumbing
    def _forward(self, **kwargs):
        if self._keep_arg:
            kwargs["logits_to_keep"] = 1
        return self.model(use_cache=True, **kwargs)

    def _start(self, unique: list[list[int]], row_index: torch.Tensor) -> dict:
        """Encode the distinct prompts once, then copy their cache rows to the 2N batch rows."""
        if self.encoder_decoder:
            ids, mask = self._pad(unique, left=False)
            encoder = self.model.get_encoder()(input_ids=ids, attention_mask=mask)
            hidden = encoder.last_hidden_state[row_index]
            state = {"hidden": hidden, "mask": mask[row_index], "cache": None}
            start = self.model.config.decoder_start_token_id
            if start is None:
                start = self.pad_token_id
            first = torch.full((len(row_index),), start, device=self.device)
            state["logits"] = self._step(state, first)
            return state
        ids, mask = self._pad(unique, left=True)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        extra = {"position_ids": positions} if self._position_arg else {}
        out = self._forward(input_ids=ids, attention_mask=mask, **extra)
        cache = out.past_key_values
        cache.batch_select_indices(row_index)
        return {
            "cache": cache,
            "mask": mask[row_index],
            "next_position": positions[row_index, -1] + 1,
            "logits": out.logits[row_index, -1],
        }

    def _step(self, state: dict, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per row; return next-token logits (rows x vocab)."""
        tokens = tokens[:, None]
        if self.encoder_decoder:
            from transformers.modeling_outputs import BaseModelOutput

            out = self._forward(
                encoder_outputs=BaseModelOutput(last_hidden_state=state["hidden"]),
                attention_mask=state["mask"],
                decoder_input_ids=tokens,
                past_key_values=state["cache"],
            )
            state["cache"] = out.past_key_values
            return out.logits[:, -1]
        ones = torch.ones_like(tokens)
        state["mask"] = torch.cat([state["mask"], ones], 1)
        extra = {"position_ids": state["next_position"][:, None]} if self._position_arg else {}
        out = self._forward(
            input_ids=tokens,
            attention_mask=state["mask"],
            past_key_values=state["cache"],
            **extra,
        )
        state["cache"] = out.past_key_values
        state["next_position"] = state["next_position"] + 1
        return out.logits[:, -1]

    def _select(self, state: dict, rows: torch.Tensor) -> None:
        """Keep only ``rows`` of the batch (finished triples leave it)."""
        state["cache"].batch_select_indices(rows)
        state["mask"] = state["mask"][rows]
        if self.encoder_decoder:
            state["hidden"] = state["hidden"][rows]
        else:
            state["next_position"] = state["next_position"][rows]

    def _pad(self, sequences: list[list[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_sequences(sequences, self.pad_token_id, left, self.device)

    # ------------------------------------------------------------------ text
    def _text(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _output(self, ids: list[int], reason: str, stop: Sequence[str]) -> CIDOutput:
        text = self._text(ids)
        if reason == FINISH_STOP:
            pieces = [self.tokenizer.decode([t], skip_special_tokens=True) for t in ids]
            keep, text = apply_stop(stop, pieces, text)
            ids = ids[:keep]
        return CIDOutput(text=text, token_ids=tuple(ids), finish_reason=reason)


def _eos_ids(model) -> set[int]:
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = getattr(model.config, "eos_token_id", None)
    if eos is None:
        return set()
    return {int(e) for e in eos} if isinstance(eos, (list, tuple)) else {int(eos)}


def encode_prompt(tokenizer, text: str) -> list[int]:
    """Prompt ids with the tokenizer's own special tokens (as ``model.generate`` callers do)."""
    if not isinstance(text, str) or not text.strip():
        raise BiaslensError("x and x' must be non-empty text")
    return tokenizer(text)["input_ids"]


def contrastive_generate(
    model,
    tokenizer,
    x: str | Sequence[str],
    x_prime: str | Sequence[str],
    lam: float | Sequence[float],
    *,
    top_k: int = TOP_K,
    max_new_tokens: int = MAX_NEW_TOKENS,
    stop: Sequence[str] = (),
    do_sample: bool = False,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 64,
) -> CIDOutput | list[CIDOutput]:
    """CID(x; x', λ) for any transformers causal or encoder-decoder model.

    ``x``, ``x_prime`` and ``lam`` may each be one value or a list (scalars are broadcast), so a λ
    grid is ``contrastive_generate(m, t, x, x_prime, [0, 5, 50])``. Returns one
    :class:`CIDOutput` for scalar inputs, else a list in input order. Greedy by default;
    ``do_sample=True`` samples from p̃ at ``temperature`` with a per-triple generator seeded by
    ``seed + index`` (reproducible whatever the batch). ``batch_size`` counts triples.
    """
    single = isinstance(x, str) and isinstance(x_prime, str) and not isinstance(lam, Sequence)
    xs, x_primes, lams = _broadcast(x, x_prime, lam)
    decoder = ContrastiveDecoder(model, tokenizer)
    encoded = {t: encode_prompt(tokenizer, t) for t in {*xs, *x_primes}}
    outputs: list[CIDOutput] = []
    for start in range(0, len(xs), batch_size):
        part = slice(start, start + batch_size)
        outputs += decoder.decode(
            [encoded[t] for t in xs[part]],
            [encoded[t] for t in x_primes[part]],
            lams[part],
            top_k=top_k,
            max_new_tokens=max_new_tokens,
            stop=stop,
            do_sample=do_sample,
            temperature=temperature,
            seeds=[seed + i for i in range(start, start + len(xs[part]))],
        )
    return outputs[0] if single else outputs


def _broadcast(x, x_prime, lam) -> tuple[list[str], list[str], list[float]]:
    columns = [[v] if isinstance(v, (str, int, float)) else list(v) for v in (x, x_prime, lam)]
    size = max(len(c) for c in columns)
    for name, column in zip(("x", "x_prime", "lam"), columns, strict=True):
        if len(column) not in (1, size):
            raise BiaslensError(f"{name} has {len(column)} values; expected 1 or {size}")
    xs, x_primes, lams = (c * size if len(c) == 1 else c for c in columns)
    return xs, x_primes, lams
