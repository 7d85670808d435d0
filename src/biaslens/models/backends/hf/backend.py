"""The transformers backend: masked, causal, seq2seq and extractive-QA models.

:class:`HFBackend` is the LM face of a loaded model: it checks that the model's kind answers a
request type and hands the requests to the job that answers them, with the model's
:class:`~biaslens.models.backends.hf.runtime.HFRuntime` (model, tokenizer, device, padding, batch
sizers): :mod:`.scoring` (token distributions, choice log-likelihoods), :mod:`.generation`
(greedy decoding, CID), :mod:`.extractive` (span scores, answer spans) and :mod:`.forward`
(the differentiable passes scoring and fine-tuning share).

Every request type is answered in length-sorted, dynamically padded batches under
``torch.inference_mode``; only the logits that are read are computed.
"""

from __future__ import annotations

import copy
from pathlib import Path

from biaslens.models.backends.hf import extractive, forward, generation, scoring
from biaslens.models.backends.hf.loading import load_parts
from biaslens.models.backends.hf.runtime import SENTINEL, HFRuntime, fill_style
from biaslens.models.base import LM, ModelKind
from biaslens.models.checkpoints.reference import CheckpointRef
from biaslens.models.config import BackendConfig
from biaslens.models.requests import RequestType

__all__ = ["SENTINEL", "HFBackend", "fill_style", "load_hf"]


class HFBackend(HFRuntime, LM):
    """Answers the request types of its model kind with a transformers model and tokenizer."""

    answers = frozenset(RequestType) - {RequestType.SAMPLE}

    def require(self, request_type, exact: bool = True, alternative: str = "") -> None:
        """Also checks, for masked LMs, that the tokenizer has a mask token."""
        super().require(request_type, exact, alternative)
        if self.kind == ModelKind.MASKED:
            self.mask_token()

    # ------------------------------------------------------------------ request types
    def token_distribution(self, requests, progress=None):
        self.require(RequestType.TOKEN_DISTRIBUTION)
        return scoring.token_distribution(self, requests, progress)

    def choice_logprobs(self, requests, progress=None):
        self.require(RequestType.CHOICE_LOGPROBS)
        return scoring.choice_logprobs(self, requests, progress)

    def generate(self, requests, progress=None):
        self.require(RequestType.GENERATE)
        return generation.generate(self, requests, progress)

    def contrastive_generate(self, requests, progress=None):
        self.require(RequestType.CONTRASTIVE_GENERATE)
        return generation.contrastive_generate(self, requests, progress)

    def span_scores(self, requests, progress=None):
        self.require(RequestType.SPAN_SCORES)
        return extractive.span_scores(self, requests, progress)

    def answer_span(self, requests, progress=None):
        self.require(RequestType.ANSWER_SPAN)
        return extractive.answer_span(self, requests, progress)

    # ------------------------------------------------------------------ training hooks
    def encode_choice_requests(self, requests):
        """Prompt ids and, per request, the ids of each choice (see :mod:`.scoring`)."""
        return scoring.encode_choice_requests(self, requests)

    def encode_spans(self, question: str, context: str, spans, context_first: bool = False):
        """(question, context) ids and each span's first/last token (see :mod:`.extractive`)."""
        return extractive.encode_spans(self, question, context, spans, context_first)

    def continuation_logprobs(self, prompts: list[list[int]], continuations: list[list[int]]):
        """Differentiable log p(continuation | prompt) per pair (see :mod:`.forward`)."""
        return forward.continuation_logprobs(self, prompts, continuations)

    def start_end_logprobs(self, sequences: list[list[int]]):
        """Differentiable start/end log-softmax per sequence (see :mod:`.forward`)."""
        return forward.start_end_logprobs(self, sequences)

    # ------------------------------------------------------------------ fine-tuning (TrainableLM)
    def trainable_copy(self) -> HFBackend:
        """A float32 copy of the model to fine-tune (AdamW updates to bf16 weights would mostly
        round away); the original is left as it is."""
        return HFBackend(
            copy.deepcopy(self.model).float(), self.tokenizer, self.identity, self.config
        )

    def save_pretrained(self, folder: Path) -> None:
        """Write the weights and the tokenizer as a transformers folder."""
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    def load_checkpoint(self, folder: Path, name: str) -> HFBackend:
        """A saved checkpoint of this model, loaded with the same backend settings."""
        return load_hf(CheckpointRef.at(folder, name), self.config)


def load_hf(checkpoint: CheckpointRef, config: BackendConfig | None = None) -> HFBackend:
    """Load the model at ``checkpoint`` (a hub snapshot, from the local cache only when
    offline, or a local folder)."""
    return HFBackend(*load_parts(checkpoint, config))
