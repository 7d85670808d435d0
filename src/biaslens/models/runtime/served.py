"""What the engine and server backends share: every request type from three token-level
primitives, computed exactly as the transformers backend computes it.

A served model (a vLLM engine in process, or an OpenAI-compatible server) is asked only for

* ``top_k(contexts, k)``: the k most likely next tokens after each context, with exact
  log-probabilities;
* ``logprobs_of(contexts, token_ids)``: the exact log-probability of given next tokens after
  each context;
* ``greedy(contexts, max_new_tokens, k)``: greedy continuations with the top-k at each step.

From these, :class:`TokenLevelBackend` answers ``token_distribution`` (top-k at the slot and the
chain-rule probability of each target), ``choice_logprobs`` (chain rule over each choice),
``generate`` and ``contrastive_generate`` (CID, Eq. 1, decoded step by step: the top-K of
p(·|x, y) and p(w|x′, y) for exactly those K tokens at every step). Prompts are tokenized by
the model's own tokenizer here, exactly as :mod:`biaslens.models.backends.hf` tokenizes
them, and sent as token ids, so that every backend sees the same tokens.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from biaslens.common.stopping import apply_stop, contains_stop
from biaslens.errors import BiaslensError
from biaslens.models.base import LM, ModelIdentity, ProgressCallback
from biaslens.models.config import BackendConfig
from biaslens.models.requests import (
    MASK,
    ChoiceLogprobsResult,
    ContrastiveGenerateResult,
    GenerateResult,
    RequestType,
    TokenDistributionResult,
)
from biaslens.models.runtime.reply_checks import (
    check_step,
    check_step_count,
)
from biaslens.models.runtime.tokenization import LocalTokenizer, encode_causal_prompts

TopK = list[tuple[int, float]]
"""(token id, log-probability) pairs, most likely first."""


def model_eos_ids(folder) -> set[int]:
    """The ids that end contrastive decoding, as the transformers decoder reads them: the
    generation config's ``eos_token_id``, else the model config's."""
    for name in ("generation_config.json", "config.json"):
        path = Path(folder) / name
        try:
            eos = json.loads(path.read_text()).get("eos_token_id") if path.is_file() else None
        except ValueError:
            eos = None
        if isinstance(eos, int):
            return {eos}
        if isinstance(eos, list) and eos:
            return {int(e) for e in eos}
    return set()


class TokenLevelBackend(LocalTokenizer, LM):
    """Answers requests of a causal model from the three primitives (see the module)."""

    answers = frozenset(
        {
            RequestType.TOKEN_DISTRIBUTION,
            RequestType.CHOICE_LOGPROBS,
            RequestType.GENERATE,
            RequestType.CONTRASTIVE_GENERATE,
        }
    )

    identity: ModelIdentity
    config: BackendConfig
    max_length: int | None = None
    chunk_size: int = 64
    """Requests per primitive call (also how often progress is reported)."""

    def __init__(
        self, tokenizer, identity: ModelIdentity, config: BackendConfig, cid_eos: set[int]
    ) -> None:
        self.tokenizer = tokenizer
        self.identity = identity
        self.config = config
        eos = tokenizer.eos_token_id if tokenizer is not None else None
        self.generate_eos = {int(eos)} if eos is not None else set()
        """Where ``generate`` stops: the tokenizer's EOS (as ``HFBackend.generate``)."""
        self.cid_eos = cid_eos
        """Where CID stops: the model's EOS ids (as the transformers CID decoder)."""
        self._decoded: dict[int, str] = {}

    # ------------------------------------------------------------------ primitives
    def top_k(self, contexts: list[list[int]], k: int) -> list[TopK]:
        raise NotImplementedError

    def logprobs_of(
        self, contexts: list[list[int]], token_ids: list[list[int]]
    ) -> list[list[float]]:
        raise NotImplementedError

    def greedy(
        self, contexts: list[list[int]], max_new_tokens: int, k: int
    ) -> list[tuple[list[int], list[TopK]]]:
        """``max_new_tokens`` greedy tokens (EOS does not stop it: the caller cuts there)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ checked primitives
    @property
    def source(self) -> str:
        """Who answered, for error messages (a served backend names its server)."""
        return f"the {self.identity.backend} backend of {self.identity.name!r}"

    def checked_top_k(self, contexts: list[list[int]], k: int) -> list[TopK]:
        tops = self.top_k(contexts, k)
        for top in tops:
            check_step(top, f"{self.source} (a top-k next token)")
        return tops

    def checked_logprobs_of(
        self, contexts: list[list[int]], token_ids: list[list[int]]
    ) -> list[list[float]]:
        values = self.logprobs_of(contexts, token_ids)
        for ids, row in zip(token_ids, values, strict=True):
            check_step(zip(ids, row, strict=True), f"{self.source} (the given next tokens)")
        return values

    def checked_greedy(
        self, contexts: list[list[int]], max_new_tokens: int, k: int
    ) -> list[tuple[list[int], list[TopK]]]:
        outputs = self.greedy(contexts, max_new_tokens, k)
        where = f"{self.source} (a greedy continuation)"
        for tokens, steps in outputs:
            check_step_count(max(len(tokens), len(steps)), max_new_tokens, where)
            for step in steps:
                check_step(step, where)
        return outputs

    # ------------------------------------------------------------------ tokenization (= hf)
    def encode_prompts(self, texts: Sequence[str]) -> list[list[int]]:
        return encode_causal_prompts(
            self.tokenizer, texts, self.config.options.add_bos, self.config.options
        )

    def _chunks(self, n: int) -> Iterator[slice]:
        for start in range(0, n, self.chunk_size):
            yield slice(start, min(n, start + self.chunk_size))

    # ------------------------------------------------------------------ chain rule
    def sequence_logprobs(
        self, prompts: list[list[int]], continuations: list[list[int]]
    ) -> list[float]:
        """log p(continuation | prompt) by the chain rule, one query per distinct context."""
        queries: dict[tuple[int, ...], list[int]] = {}
        for prompt, continuation in zip(prompts, continuations, strict=True):
            for j, token in enumerate(continuation):
                wanted = queries.setdefault(tuple(prompt) + tuple(continuation[:j]), [])
                if token not in wanted:
                    wanted.append(token)
        contexts = list(queries)
        values = self.checked_logprobs_of(
            [list(c) for c in contexts], [queries[c] for c in contexts]
        )
        table = {
            (context, token): value
            for context, tokens, row in zip(
                contexts, (queries[c] for c in contexts), values, strict=True
            )
            for token, value in zip(tokens, row, strict=True)
        }
        return [
            math.fsum(
                table[(tuple(prompt) + tuple(continuation[:j]), token)]
                for j, token in enumerate(continuation)
            )
            for prompt, continuation in zip(prompts, continuations, strict=True)
        ]

    # ------------------------------------------------------------------ request types
    def token_distribution(self, requests, progress: ProgressCallback | None = None):
        self.require(RequestType.TOKEN_DISTRIBUTION)
        if any(MASK in r.text for r in requests):
            raise BiaslensError(
                f"{self.identity.backend} backend: {MASK} requests are for masked LMs, which "
                "run on the transformers backend (--backend hf)"
            )
        prompts, targets = self.encode_with_targets(requests)
        results = []
        for part in self._chunks(len(requests)):
            chunk, ids = requests[part], prompts[part]
            tops = self.checked_top_k(ids, max(r.top_k for r in chunk))
            flat = [(i, t) for i, r in enumerate(chunk) for t in r.targets]
            scores = self.sequence_logprobs(
                [ids[i] for i, _ in flat], [targets[t] for _, t in flat]
            )
            by_target = dict(zip(flat, scores, strict=True))
            for i, (request, top) in enumerate(zip(chunk, tops, strict=True)):
                shown = top[: request.top_k]
                results.append(
                    TokenDistributionResult(
                        target_probs=tuple(math.exp(by_target[(i, t)]) for t in request.targets),
                        target_ids=tuple(tuple(targets[t]) for t in request.targets),
                        top_tokens=tuple(self.decode_token(t) for t, _ in shown),
                        top_probs=tuple(math.exp(v) for _, v in shown),
                    )
                )
            if progress is not None:
                progress(len(chunk))
        return results

    def choice_logprobs(self, requests, progress: ProgressCallback | None = None):
        self.require(RequestType.CHOICE_LOGPROBS)
        choices = [[self.encode_continuation(c) for c in r.choices] for r in requests]
        if any(not c for row in choices for c in row):
            raise BiaslensError("a choice tokenizes to nothing; choices must be non-empty text")
        longest = max((len(c) for row in choices for c in row), default=0)
        prompts = self.fit_left(
            self.encode_prompts([r.prompt for r in requests]), longest, RequestType.CHOICE_LOGPROBS
        )
        results = []
        for part in self._chunks(len(requests)):
            index = range(part.start, part.stop)
            flat = [(i, c) for i in index for c in choices[i]]
            sums = iter(self.sequence_logprobs([prompts[i] for i, _ in flat], [c for _, c in flat]))
            for i in index:
                values = tuple(next(sums) for _ in choices[i])
                results.append(ChoiceLogprobsResult(values, tuple(len(c) for c in choices[i])))
            if progress is not None:
                progress(len(index))
        return results

    def generate(self, requests, progress: ProgressCallback | None = None):
        self.require(RequestType.GENERATE)
        results = [None] * len(requests)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.max_new_tokens, r.top_k), []).append(i)
        for (max_new, top_k), index in groups.items():
            prompts = self.fit_left(
                self.encode_prompts([requests[i].prompt for i in index]),
                max_new,
                RequestType.GENERATE,
            )
            for part in self._chunks(len(index)):
                chunk = index[part]
                outputs = self.checked_greedy(prompts[part], max_new, top_k)
                for i, (tokens, steps) in zip(chunk, outputs, strict=True):
                    results[i] = self._generate_result(requests[i], tokens, steps)
                if progress is not None:
                    progress(len(chunk))
        return results

    def _generate_result(self, request, tokens: list[int], steps: list[TopK]) -> GenerateResult:
        for position, token in enumerate(tokens):
            if token in self.generate_eos:
                tokens, steps = tokens[: position + 1], steps[: position + 1]
                break
        pieces = [self.decode_token(t) for t in tokens]
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        kept, text = apply_stop(request.stop, pieces, text)
        return GenerateResult(
            text=text,
            tokens=tuple(pieces[:kept]),
            step_top_tokens=tuple(
                tuple(self.decode_token(t) for t, _ in step[: request.top_k])
                for step in steps[:kept]
            ),
            step_top_probs=tuple(
                tuple(math.exp(v) for _, v in step[: request.top_k]) for step in steps[:kept]
            ),
        )

    def contrastive_generate(self, requests, progress: ProgressCallback | None = None):
        """CID decoded step by step: per step, the top-K of p(·|x, y) and p(w|x′, y) of those
        K tokens for every unfinished triple (two batched calls), then Eq. 1 here."""
        self.require(RequestType.CONTRASTIVE_GENERATE)
        for i, r in enumerate(requests):
            if not r.x.strip() or not r.x_prime.strip():
                raise BiaslensError(f"request {i}: x and x' must be non-empty text")
        texts = list(dict.fromkeys(t for r in requests for t in (r.x, r.x_prime)))
        reserve = max((r.max_new_tokens for r in requests), default=0)
        fitted = self.fit_left(
            self.encode_prompts(texts), reserve, RequestType.CONTRASTIVE_GENERATE
        )
        encoded = dict(zip(texts, fitted, strict=True))
        results = []
        for part in self._chunks(len(requests)):
            results += self._decode_cid(requests[part], encoded)
            if progress is not None:
                progress(part.stop - part.start)
        return results

    def _decode_cid(self, requests, encoded) -> list[ContrastiveGenerateResult]:
        import torch

        from biaslens.decoding.contrastive import FINISH_EOS, FINISH_LENGTH, FINISH_STOP

        n = len(requests)
        generated: list[list[int]] = [[] for _ in range(n)]
        reasons = [FINISH_LENGTH] * n
        active = list(range(n))
        generators = [
            torch.Generator().manual_seed(int(r.seed)) if r.do_sample else None for r in requests
        ]
        vocab = len(self.tokenizer)
        step = 0
        while active:
            ks = {requests[i].top_k for i in active}
            tops: dict[int, TopK] = {}
            for k in ks:
                group = [i for i in active if requests[i].top_k == k]
                for i, top in zip(
                    group,
                    self.checked_top_k([encoded[requests[i].x] + generated[i] for i in group], k),
                    strict=True,
                ):
                    tops[i] = top
            contrast = self.checked_logprobs_of(
                [encoded[requests[i].x_prime] + generated[i] for i in active],
                [[t for t, _ in tops[i]] for i in active],
            )
            still = []
            for i, lp_prime in zip(active, contrast, strict=True):
                request = requests[i]
                ids = np.array([t for t, _ in tops[i]])
                lp_x = np.array([v for _, v in tops[i]])
                scores = request.lam * (np.exp(lp_x) - np.exp(np.array(lp_prime))) + lp_x
                token = self._choose(ids, scores, request, generators[i], vocab)
                generated[i].append(token)
                if token in self.cid_eos:
                    reasons[i] = FINISH_EOS
                elif request.stop and contains_stop(
                    request.stop, self.tokenizer.decode(generated[i], skip_special_tokens=True)
                ):
                    reasons[i] = FINISH_STOP
                elif len(generated[i]) < request.max_new_tokens:
                    still.append(i)
            active = still
            step += 1
        results = []
        for request, ids, reason in zip(requests, generated, reasons, strict=True):
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            if reason == FINISH_STOP:
                pieces = [self.tokenizer.decode([t], skip_special_tokens=True) for t in ids]
                keep, text = apply_stop(request.stop, pieces, text)
                ids = ids[:keep]
            results.append(ContrastiveGenerateResult(text, len(ids), reason))
        return results

    @staticmethod
    def _choose(ids: np.ndarray, scores: np.ndarray, request, generator, vocab: int) -> int:
        """Greedy: the best score, the smallest token id on ties (as argmax over the vocabulary
        does); sampling: from the full-vocabulary p̃ (zero outside the top-K) with the triple's
        seeded generator, as the transformers decoder draws."""
        if not request.do_sample:
            best = scores.max()
            return int(ids[scores == best].min())
        import torch

        full = torch.full((vocab,), -math.inf)
        full[torch.as_tensor(ids)] = torch.as_tensor(scores, dtype=full.dtype)
        probs = (full / request.temperature).softmax(-1)
        return int(torch.multinomial(probs, 1, generator=generator))
