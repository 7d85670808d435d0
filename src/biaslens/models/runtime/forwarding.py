"""An LM that forwards every request type to one method: the request cache and the Ray
replicas wrap another backend this way."""

from __future__ import annotations

from biaslens.models.base import LM, ProgressCallback
from biaslens.models.requests import RequestType


class ForwardingLM(LM):
    """An LM that answers every request type through one ``_answer(requests, progress)`` (the
    request cache, the Ray replicas), which subclasses implement."""

    answers = frozenset(RequestType)

    def _answer(self, requests, progress: ProgressCallback | None) -> list:
        raise NotImplementedError

    def token_distribution(self, requests, progress=None):
        return self._answer(requests, progress)

    def span_scores(self, requests, progress=None):
        return self._answer(requests, progress)

    def answer_span(self, requests, progress=None):
        return self._answer(requests, progress)

    def choice_logprobs(self, requests, progress=None):
        return self._answer(requests, progress)

    def generate(self, requests, progress=None):
        return self._answer(requests, progress)

    def contrastive_generate(self, requests, progress=None):
        return self._answer(requests, progress)

    def sample(self, requests, progress=None):
        return self._answer(requests, progress)
