"""The OpenAI-compatible server backend (``--backend openai --base-url URL``): vLLM, SGLang,
TGI, OpenAI or any server speaking ``/v1/completions``.

Scoring uses the protocol lm-evaluation-harness's ``local-completions`` uses: prompts sent as
token ids, ``echo`` with ``logprobs`` for the log-probability of given tokens, ``logprobs=k``
for the top-k next tokens, greedy generation with ``temperature=0``. With the model's
tokenizer at hand (``--tokenizer``, or the registered model's own folder) prompts are tokenized
here exactly as the in-process backends tokenize them, so answers equal theirs.

At start the server is probed (:mod:`.server_probe`): a server whose log-probabilities are
missing or misaligned is named, never trusted silently; servers that understand vLLM's
``logprob_token_ids`` get the faster path for given-token log-probabilities. Transport, retries
and the API key: :mod:`.http_client`.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

from biaslens.common.stopping import apply_stop
from biaslens.common.urls import redact_url
from biaslens.errors import BiaslensError
from biaslens.models.backends.openai.chat import CHAT_CAPABILITIES, check_chat_request
from biaslens.models.backends.openai.http_client import HTTPClient, ServedBy, key_variable
from biaslens.models.backends.openai.replies import (
    TOKEN_PREFIX,
    ServerError,
    choice_logprobs,
    completion_choices,
    token_id,
)
from biaslens.models.backends.openai.sampling import SampledBy, SamplingEndpoint
from biaslens.models.backends.openai.server_probe import (
    NO_LOGPROBS,
    probe_server,
    served_fingerprint,
    served_model,
    server_metadata,
)
from biaslens.models.base import GENERATIVE, Exactness, ModelIdentity, ModelKind
from biaslens.models.checkpoints.local import model_fingerprint
from biaslens.models.checkpoints.reference import checkpoint_ref
from biaslens.models.checkpoints.registered import registered_model
from biaslens.models.config import BackendConfig
from biaslens.models.requests import GenerateResult, RequestType
from biaslens.models.runtime.dry_run import PlannedModel
from biaslens.models.runtime.reply_checks import check_step, check_step_count
from biaslens.models.runtime.served import TokenLevelBackend, TopK, model_eos_ids
from biaslens.models.runtime.tokenization import chat_identity, check_chat

__all__ = ["ServerError", "OpenAIBackend", "load_openai", "probe_server", "TOKEN_PREFIX"]


class OpenAIBackend(SampledBy, ServedBy, TokenLevelBackend):
    """A causal model behind an OpenAI-compatible server (see the module docstring)."""

    answers = TokenLevelBackend.answers | {RequestType.SAMPLE}

    def __init__(self, client: HTTPClient, model: str, tokenizer, identity, config, probe, eos):
        super().__init__(tokenizer, identity, config, eos)
        self.connect(client, model, config.options.concurrency)
        self.probe = probe
        self.max_length = probe.get("max_model_len")
        self.max_logprobs = probe.get("max_logprobs")

    @property
    def source(self) -> str:
        return f"server {self.client.base_url} (model {self.model!r})"

    @property
    def capabilities(self) -> dict[RequestType, Exactness]:
        sampled = {RequestType.SAMPLE: Exactness.EXACT}
        if self.probe["mode"] == "tokens":
            return {
                RequestType.TOKEN_DISTRIBUTION: Exactness.EXACT,
                RequestType.CHOICE_LOGPROBS: Exactness.EXACT,
                RequestType.GENERATE: Exactness.EXACT,
                RequestType.CONTRASTIVE_GENERATE: Exactness.EXACT,
                **sampled,
            }
        if self.probe.get("why") == NO_LOGPROBS:  # replies are all it gives
            return sampled
        return {RequestType.GENERATE: Exactness.EXACT, **sampled}

    def sampling_endpoint(self):
        """Sampled calls to ``/completions``: the prompt as token ids, encoded as every other
        request (chat template, BOS), where the server takes them; else as text."""

        def prompt_part(prompt: str) -> dict:
            if self.probe["mode"] == "tokens":
                return {"prompt": self.encode_prompts([prompt])[0]}
            return {"prompt": prompt}

        return SamplingEndpoint(
            self.client, self.model, "/completions", prompt_part, not self.config.options.unseeded
        )

    def require(self, request_type, exact: bool = True, alternative: str = "") -> None:
        if RequestType(request_type) not in self.capabilities and self.probe.get("why"):
            raise BiaslensError(
                f"{self.client.base_url} cannot answer {RequestType(request_type).value} "
                f"requests: {self.probe['why']}" + (f"; {alternative}" if alternative else "")
            )
        super().require(request_type, exact, alternative)

    def _check_k(self, k: int) -> None:
        if self.max_logprobs is not None and k > self.max_logprobs:
            raise BiaslensError(
                f"{self.client.base_url} returns at most {self.max_logprobs} log-probabilities per "
                f"token; this request needs {k} (start the server with a larger limit, e.g. "
                f"vLLM's --max-logprobs {k})"
            )

    def _payload(self, prompt, **options) -> dict:
        return {"model": self.model, "prompt": prompt, "temperature": 0.0, **options}

    # ------------------------------------------------------------------ primitives
    def top_k(self, contexts, k) -> list[TopK]:
        self._check_k(k)
        payloads = [
            self._payload(list(c), max_tokens=1, logprobs=k, return_tokens_as_token_ids=True)
            for c in contexts
        ]
        tops = []
        for response in self.client.post_many("/completions", payloads):
            choice = completion_choices(response, 1, self.client.base_url)[0]
            step = choice_logprobs(choice).top_logprobs or [None]
            if not step[0]:
                raise ServerError(
                    f"{self.client.base_url}: the answer has no top log-probabilities"
                )
            ranked = sorted(
                ((token_id(t, self.client.base_url), float(v)) for t, v in step[0].items()),
                key=lambda item: (-item[1], item[0]),
            )
            tops.append(ranked[:k])
        return tops

    def logprobs_of(self, contexts, token_ids) -> list[list[float]]:
        if self.probe.get("token_ids_extension"):
            return self._logprobs_by_extension(contexts, token_ids)
        return self._logprobs_by_echo(contexts, token_ids)

    def _logprobs_by_extension(self, contexts, token_ids) -> list[list[float]]:
        payloads = [
            self._payload(
                list(c),
                max_tokens=1,
                logprobs=1,
                logprob_token_ids=list(ids),
                return_tokens_as_token_ids=True,
            )
            for c, ids in zip(contexts, token_ids, strict=True)
            if ids
        ]
        responses = iter(self.client.post_many("/completions", payloads))
        results = []
        for ids in token_ids:
            if not ids:
                results.append([])
                continue
            choice = completion_choices(next(responses), 1, self.client.base_url)[0]
            step = (choice_logprobs(choice).top_logprobs or [None])[0] or {}
            by_id = {token_id(t, self.client.base_url): float(v) for t, v in step.items()}
            missing = [t for t in ids if t not in by_id]
            if missing:
                raise ServerError(
                    f"{self.client.base_url}: the answer lacks the log-probabilities of the "
                    f"asked token ids {missing[:5]} (logprob_token_ids)"
                )
            results.append([by_id[t] for t in ids])
        return results

    def _logprobs_by_echo(self, contexts, token_ids) -> list[list[float]]:
        flat = [(i, t) for i, ids in enumerate(token_ids) for t in ids]
        payloads = [
            self._payload([*contexts[i], t], max_tokens=1, echo=True, logprobs=1) for i, t in flat
        ]
        values: dict[tuple[int, int], float] = {}
        for (i, t), response in zip(
            flat, self.client.post_many("/completions", payloads), strict=True
        ):
            choice = completion_choices(response, 1, self.client.base_url)[0]
            logprobs = choice_logprobs(choice).token_logprobs or []
            position = len(contexts[i])
            if len(logprobs) <= position or logprobs[position] is None:
                raise ServerError(
                    f"{self.client.base_url}: no echoed log-probability for a prompt token"
                )
            values[(i, t)] = float(logprobs[position])
        return [[values[(i, t)] for t in ids] for i, ids in enumerate(token_ids)]

    def greedy(self, contexts, max_new_tokens, k):
        self._check_k(k)
        payloads = [
            self._payload(
                list(c),
                max_tokens=max_new_tokens,
                logprobs=k,
                return_tokens_as_token_ids=True,
                ignore_eos=True,
            )
            for c in contexts
        ]
        results = []
        for response in self.client.post_many("/completions", payloads):
            logprobs = choice_logprobs(completion_choices(response, 1, self.client.base_url)[0])
            tokens = [token_id(t, self.client.base_url) for t in logprobs.tokens or []]
            steps = [
                sorted(
                    (
                        (token_id(t, self.client.base_url), float(v))
                        for t, v in (step or {}).items()
                    ),
                    key=lambda item: (-item[1], item[0]),
                )[:k]
                for step in logprobs.top_logprobs or []
            ]
            results.append((tokens, steps))
        return results

    # ------------------------------------------------------------------ text-only servers
    def generate(self, requests, progress=None):
        if self.probe["mode"] == "tokens":
            return super().generate(requests, progress)
        self.require(RequestType.GENERATE)
        results = []
        for part in self._chunks(len(requests)):
            chunk = requests[part]
            for request in chunk:
                self._check_k(request.top_k)
            payloads = [
                self._payload(r.prompt, max_tokens=r.max_new_tokens, logprobs=r.top_k)
                for r in chunk
            ]
            for request, response in zip(
                chunk, self.client.post_many("/completions", payloads), strict=True
            ):
                results.append(_text_generation(request, response, self.client.base_url))
            if progress is not None:
                progress(len(chunk))
        return results


def _text_generation(request, response, url) -> GenerateResult:
    choice = completion_choices(response, 1, url)[0]
    logprobs = choice_logprobs(choice)
    pieces = list(logprobs.tokens or [])
    where = f"{url}/completions"
    check_step_count(
        max(len(pieces), len(logprobs.top_logprobs or [])), request.max_new_tokens, where
    )
    steps = []
    for step in logprobs.top_logprobs or []:
        check_step((step or {}).items(), where)
        steps.append(sorted((step or {}).items(), key=lambda item: -item[1]))
    kept, text = apply_stop(request.stop, pieces, choice.text)
    return GenerateResult(
        text=text,
        tokens=tuple(pieces[:kept]),
        step_top_tokens=tuple(tuple(t for t, _ in s[: request.top_k]) for s in steps[:kept]),
        step_top_probs=tuple(
            tuple(math.exp(v) for _, v in s[: request.top_k]) for s in steps[:kept]
        ),
    )


def uses_chat_endpoint(config: BackendConfig, has_tokenizer: bool) -> bool:
    """Whether prompts go to ``/v1/chat/completions``: asked for (``--endpoint chat``), or
    ``--chat`` with no tokenizer of the model to apply its template here."""
    return config.options.chat and (
        config.options.endpoint == "chat"
        or (config.options.endpoint == "auto" and not has_tokenizer)
    )


def tokenizer_folder(name: str, config: BackendConfig) -> Path | None:
    """The served model's tokenizer folder: ``--tokenizer``, else a registered model's own."""
    options = config.options
    if options.tokenizer:
        entry = registered_model(options.tokenizer)
        if entry is not None:
            return entry.folder(options.offline)
        return checkpoint_ref(options.tokenizer).folder(options.offline)
    entry = registered_model(name)
    return entry.folder(options.offline) if entry is not None and entry.answers_requests else None


def plan_openai(name: str, config: BackendConfig):
    """What ``--dry-run`` knows of a served model: its tokenizer, if biaslens has one, and the
    endpoint it would be asked through (a chat endpoint answers generation only)."""
    folder = tokenizer_folder(name, config)
    if not uses_chat_endpoint(config, folder is not None):
        exact = GENERATIVE if folder is not None else {RequestType.GENERATE: Exactness.EXACT}
        sampled = {RequestType.SAMPLE: Exactness.EXACT}
        return PlannedModel(capabilities={**exact, **sampled}, tokenizer_folder=folder)
    url = redact_url(config.options.base_url or "")

    def check(request_type, alternative=""):
        check_chat_request(request_type, f"{url}/chat/completions", alternative)

    return PlannedModel(capabilities=CHAT_CAPABILITIES, tokenizer_folder=folder, check=check)


def load_openai(name: str, config: BackendConfig | None = None):
    """Connect to the server at ``config.options.base_url`` serving model ``name`` and probe it."""
    config = config or BackendConfig(backend="openai")
    if not config.options.base_url:
        raise BiaslensError("the openai backend needs the server's address: --base-url URL")
    if not config.options.base_url.startswith(("http://", "https://")):
        raise BiaslensError(
            "--base-url must start with http:// or https://, got "
            f"{redact_url(config.options.base_url)!r}"
        )
    variable = key_variable(config.options)
    if not os.environ.get(variable):
        warnings.warn(
            f"${variable} is not set: requests go to "
            f"{redact_url(config.options.base_url)} "
            "without an API key (fine for a local server; set it for a hosted one)",
            stacklevel=2,
        )
    folder = tokenizer_folder(name, config)
    if uses_chat_endpoint(config, folder is not None):
        from biaslens.models.backends.openai.chat import load_chat_endpoint

        return load_chat_endpoint(name, config)
    tokenizer = None
    if folder is not None:
        from biaslens.models.checkpoints.local import load_tokenizer

        tokenizer = load_tokenizer(folder)
    check_chat(tokenizer, ModelKind.CAUSAL, config.options, name)
    client = HTTPClient(config)
    try:
        served = served_model(client, name)
        probe = probe_server(client, name, tokenizer)
    except BaseException:
        client.close()
        raise
    probe["max_model_len"] = served.get("max_model_len")
    probe["max_logprobs"] = served.get("max_logprobs")
    metadata = server_metadata(served)
    described = {"base_url": client.base_url, "model": name, "server": metadata}
    if folder is not None:
        described["tokenizer_sha256"] = model_fingerprint(folder)
    fingerprint = served_fingerprint(described)
    identity = ModelIdentity(
        name=name,
        kind=ModelKind.CAUSAL,
        fingerprint=fingerprint,
        backend="openai",
        numerics=(("add_bos", str(config.options.add_bos)), *chat_identity(config.options)),
        details=(
            ("base_url", client.base_url),
            ("server_model", json.dumps(metadata, sort_keys=True, default=str)),
            (
                "scoring",
                {"tokens": "token ids", "text": "text only"}[probe["mode"]]
                + (
                    ", logprob_token_ids"
                    if probe.get("token_ids_extension")
                    else ", echo"
                    if probe["mode"] == "tokens"
                    else ""
                ),
            ),
        ),
    )
    eos = model_eos_ids(folder) if folder is not None else set()
    return OpenAIBackend(client, name, tokenizer, identity, config, probe, eos)
