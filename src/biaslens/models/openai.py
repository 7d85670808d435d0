"""The OpenAI-compatible server backend (``--backend openai --base-url URL``): vLLM, SGLang,
TGI, OpenAI or any server speaking ``/v1/completions``.

Scoring uses the protocol lm-evaluation-harness's ``local-completions`` uses: prompts sent as
token ids, ``echo`` with ``logprobs`` for the log-probability of given tokens, ``logprobs=k``
for the top-k next tokens, greedy generation with ``temperature=0``. With the model's
tokenizer at hand (``--tokenizer``, or the registered model's own folder) prompts are tokenized
here exactly as the in-process backends tokenize them, so answers equal theirs.

At start the backend **probes** the server: the next token after a probe prompt and its
log-probability (request 1), then the same prompt with that token appended, echoed (request 2).
The echoed log-probability must sit at that token's position and equal request 1's: a server
that returns none (no scoring possible: only ``generate`` is offered) or returns them shifted
(llama.cpp's echo is off by one position) is named, never trusted silently. Servers that
understand vLLM's ``logprob_token_ids`` get the faster path for given-token log-probabilities
(prefix caching applies; echo re-runs the prompt).

Transport: async HTTP (httpx) with ``concurrency`` requests in flight, a per-request timeout,
retries with exponential back-off and jitter on 429, 5xx, timeouts and broken connections, and
a one-line error naming the server when retries run out. The API key is read from the
environment variable named by ``api_key_env`` and never written anywhere.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import threading
from pathlib import Path
from typing import Any

from biaslens.errors import BiaslensError
from biaslens.models.base import (
    BackendConfig,
    Exactness,
    ModelIdentity,
    ModelKind,
    redact_url,
)
from biaslens.models.requests import GenerateResult, RequestType
from biaslens.models.served import TokenLevelBackend, TopK, model_eos_ids
from biaslens.models.server_replies import (
    TOKEN_PREFIX,
    Logprobs,
    ModelList,
    ServerError,
    completion_choices,
    parse,
    token_id,
)

PROBE_PROMPT = "The capital of France is"
PROBE_TOLERANCE = 1e-3
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
__all__ = ["ServerError", "OpenAIBackend", "load_openai", "probe_server", "TOKEN_PREFIX"]


class _Client:
    """Async HTTP on a background event loop, called synchronously by the backend."""

    def __init__(self, config: BackendConfig) -> None:
        try:
            import httpx
        except ImportError:
            raise BiaslensError("the openai backend needs httpx: pip install httpx") from None
        self.httpx = httpx
        self._url = config.base_url.rstrip("/")  # with any user:password, for the requests
        self.base_url = redact_url(self._url)
        """The server's address as shown and recorded (no user name or password)."""
        self.timeout = float(config.timeout)
        self.retries = int(config.max_retries)
        self.concurrency = int(config.concurrency)
        key = os.environ.get(config.api_key_env) if config.api_key_env else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.key_env = config.api_key_env
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._client = self._call(self._make_client())
        self._semaphore = self._call(self._make_semaphore())

    async def _make_client(self):
        limits = self.httpx.Limits(max_connections=self.concurrency * 2)
        return self.httpx.AsyncClient(timeout=self.timeout, limits=limits, headers=self._headers)

    async def _make_semaphore(self):
        return asyncio.Semaphore(self.concurrency)

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def get(self, path: str) -> Any:
        return self._call(self._request("GET", path, None))

    def post_many(self, path: str, payloads: list[dict]) -> list[Any]:
        async def gather():
            return await asyncio.gather(*(self._request("POST", path, p) for p in payloads))

        return self._call(gather()) if payloads else []

    async def _request(self, method: str, path: str, payload: dict | None) -> Any:
        url = f"{self.base_url}{path}"  # for messages; requests go to self._url
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(min(8.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random()))
            try:
                async with self._semaphore:
                    response = await self._client.request(
                        method, f"{self._url}{path}", json=payload
                    )
            except self.httpx.TimeoutException:
                problem = f"no answer within {self.timeout:g} s"
                continue
            except self.httpx.TransportError as error:
                problem = f"connection failed ({type(error).__name__}: {error})"
                continue
            if response.status_code in (401, 403):
                raise ServerError(
                    f"{url}: the server refused the API key (HTTP {response.status_code}); set "
                    f"${self.key_env} to a valid key"
                )
            if response.status_code in RETRY_STATUS:
                problem = f"HTTP {response.status_code}"
                continue
            if response.status_code >= 400:
                raise ServerError(f"{url}: HTTP {response.status_code}: {_message(response)}")
            try:
                return response.json()
            except ValueError:
                problem = "the answer is not valid JSON"
                continue
        raise ServerError(
            f"{url}: {problem} after {self.retries + 1} attempt(s); finished answers are kept in "
            "the run's cache, rerun the same command to resume once the server is back"
        )

    def close(self) -> None:
        try:
            self._call(self._client.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)


def _message(response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]


def _logprobs(choice) -> Logprobs:
    """The choice's log-probabilities (an empty record when the server sent none)."""
    return choice.logprobs or Logprobs()


class OpenAIBackend(TokenLevelBackend):
    """A causal model behind an OpenAI-compatible server (see the module docstring)."""

    def __init__(self, client: _Client, model: str, tokenizer, identity, config, probe, eos):
        super().__init__(tokenizer, identity, config, eos)
        self.client = client
        self.model = model
        self.probe = probe
        self.max_length = probe.get("max_model_len")
        self.max_logprobs = probe.get("max_logprobs")
        self.chunk_size = max(8, 4 * config.concurrency)
        self.cache_chunk_size = self.chunk_size
        """Answers are committed to a run's cache in chunks this size as they complete."""

    @property
    def source(self) -> str:
        return f"server {self.client.base_url} (model {self.model!r})"

    @property
    def capabilities(self) -> dict[RequestType, Exactness]:
        if self.probe["mode"] == "tokens":
            return {
                RequestType.TOKEN_DISTRIBUTION: Exactness.EXACT,
                RequestType.CHOICE_LOGPROBS: Exactness.EXACT,
                RequestType.GENERATE: Exactness.EXACT,
                RequestType.CONTRASTIVE_GENERATE: Exactness.EXACT,
            }
        return {RequestType.GENERATE: Exactness.EXACT}

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
            step = _logprobs(choice).top_logprobs or [None]
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
            step = (_logprobs(choice).top_logprobs or [None])[0] or {}
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
            logprobs = _logprobs(choice).token_logprobs or []
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
            logprobs = _logprobs(completion_choices(response, 1, self.client.base_url)[0])
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

    def close(self) -> None:
        self.client.close()


def _text_generation(request, response, url) -> GenerateResult:
    from biaslens.common.stopping import apply_stop

    choice = completion_choices(response, 1, url)[0]
    logprobs = _logprobs(choice)
    pieces = list(logprobs.tokens or [])
    steps = [
        sorted(((t, float(v)) for t, v in (step or {}).items()), key=lambda item: -item[1])
        for step in logprobs.top_logprobs or []
    ]
    kept, text = apply_stop(request.stop, pieces, choice.text)
    return GenerateResult(
        text=text,
        tokens=tuple(pieces[:kept]),
        step_top_tokens=tuple(tuple(t for t, _ in s[: request.top_k]) for s in steps[:kept]),
        step_top_probs=tuple(
            tuple(math.exp(v) for _, v in s[: request.top_k]) for s in steps[:kept]
        ),
    )


def _served_model(client: _Client, name: str) -> dict:
    served = parse(ModelList, client.get("/models"), client.base_url, "/models").data
    for entry in served:
        if entry.id == name:
            return entry.model_dump()
    names = ", ".join(m.id for m in served) or "none"
    raise BiaslensError(
        f"{client.base_url} does not serve a model named {name!r} (it serves: {names})"
    )


def _close(values: list, position: int, expected: float) -> bool:
    if not 0 <= position < len(values) or values[position] is None:
        return False
    return abs(float(values[position]) - expected) <= PROBE_TOLERANCE


def probe_server(client: _Client, model: str, tokenizer) -> dict:
    """What the server can do, checked on a probe prompt (see the module docstring)."""
    url = client.base_url
    if tokenizer is None:
        return {"mode": "text", "why": "no local tokenizer for the served model (--tokenizer)"}
    prompt = tokenizer(PROBE_PROMPT)["input_ids"]
    first = client.post_many(
        "/completions",
        [
            {
                "model": model,
                "prompt": prompt,
                "max_tokens": 1,
                "temperature": 0.0,
                "logprobs": 5,
                "return_tokens_as_token_ids": True,
            }
        ],  # fmt: skip
    )[0]
    choice = completion_choices(first, 1, url)[0]
    top = (_logprobs(choice).top_logprobs or [None])[0]
    if not top:
        return {"mode": "text", "why": "the server returns no log-probabilities"}
    if not all(str(t).startswith(TOKEN_PREFIX) for t in top):
        return {
            "mode": "text",
            "why": "the server does not return token ids (vLLM's return_tokens_as_token_ids)",
        }
    token, expected = max(
        ((token_id(t, url), float(v)) for t, v in top.items()), key=lambda i: i[1]
    )
    echoed = client.post_many(
        "/completions",
        [
            {
                "model": model,
                "prompt": [*prompt, token],
                "max_tokens": 1,
                "temperature": 0.0,
                "logprobs": 1,
                "echo": True,
            }
        ],  # fmt: skip
    )[0]
    values = _logprobs(completion_choices(echoed, 1, url)[0]).token_logprobs or []
    position = len(prompt)
    if all(v is None for v in values[: position + 1]):
        return {"mode": "text", "why": "the server returns no prompt log-probabilities (echo)"}
    if not _close(values, position, expected):
        shifted = [p for p in (position - 1, position + 1) if _close(values, p, expected)]
        if shifted:
            raise BiaslensError(
                f"{url} returns misaligned prompt log-probabilities (shifted by "
                f"{shifted[0] - position:+d} position); scores from it would be wrong (llama.cpp's "
                "echo has this bug): use a server whose echo is aligned, e.g. vLLM"
            )
        got = values[position] if len(values) > position else None
        raise BiaslensError(
            f"{url} echoes a log-probability of {got} where a completion gave {expected:.4f} for "
            "the same token; scores from it would be wrong"
        )
    return {
        "mode": "tokens",
        "token_ids_extension": _probe_extension(client, model, prompt, top, url, len(tokenizer)),
        "why": "",
    }


def _probe_extension(
    client: _Client, model: str, prompt: list[int], top: dict, url: str, vocab_size: int
) -> bool:
    """Whether the server answers vLLM's ``logprob_token_ids`` — probed with a token that is
    *not* among the top ones (any server returns the top token; a server that ignores the
    extension would pass a probe with it and then lack the asked ids). The expected value comes
    from the (already verified) echo."""
    shown = {token_id(t, url) for t in top}
    middle = vocab_size // 2  # an ordinary token, not a special one at either end
    other = next(i for i in [*range(middle, vocab_size), *range(middle)] if i not in shown)
    try:
        echoed = client.post_many(
            "/completions",
            [{"model": model, "prompt": [*prompt, other], "max_tokens": 1, "temperature": 0.0,
              "logprobs": 1, "echo": True}],
        )[0]  # fmt: skip
        values = _logprobs(completion_choices(echoed, 1, url)[0]).token_logprobs or []
        if len(values) <= len(prompt) or values[len(prompt)] is None:
            return False
        expected = float(values[len(prompt)])
        answer = client.post_many(
            "/completions",
            [{"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0,
              "logprobs": 1, "logprob_token_ids": [other], "return_tokens_as_token_ids": True}],
        )[0]  # fmt: skip
        step = (_logprobs(completion_choices(answer, 1, url)[0]).top_logprobs or [None])[0] or {}
        found = {token_id(t, url): float(v) for t, v in step.items()}
    except ServerError:
        return False
    return abs(found.get(other, math.inf) - expected) <= PROBE_TOLERANCE


def _tokenizer_folder(name: str, config: BackendConfig) -> Path | None:
    from biaslens.models.hf.loading import local_folder
    from biaslens.models.registry import REGISTRY, resolve_name

    if config.tokenizer:
        entry = REGISTRY.get(resolve_name(config.tokenizer))
        folder = Path(entry.locate()) if entry is not None else local_folder(config.tokenizer)
        if folder is None:
            raise BiaslensError(
                f"--tokenizer {config.tokenizer}: no such folder or registered model"
            )
        return folder
    entry = REGISTRY.get(resolve_name(name))
    return Path(entry.locate()) if entry is not None and entry.backend == "hf" else None


def load_openai(name: str, config: BackendConfig | None = None, display_name: str | None = None):
    """Connect to the server at ``config.base_url`` serving model ``name`` and probe it."""
    from biaslens.models.hf.loading import model_fingerprint

    config = config or BackendConfig(backend="openai")
    if not config.base_url:
        raise BiaslensError("the openai backend needs the server's address: --base-url URL")
    if not config.base_url.startswith(("http://", "https://")):
        raise BiaslensError(
            f"--base-url must start with http:// or https://, got {config.base_url!r}"
        )
    if config.api_key_env and not os.environ.get(config.api_key_env):
        import warnings

        warnings.warn(
            f"${config.api_key_env} is not set: requests go to {redact_url(config.base_url)} "
            "without an API key (fine for a local server; set it for a hosted one)",
            stacklevel=2,
        )
    folder = _tokenizer_folder(name, config)
    tokenizer = None
    if folder is not None:
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(folder)
        except (OSError, ValueError) as error:
            raise BiaslensError(f"{folder}: cannot load the tokenizer ({error})") from None
    client = _Client(config)
    try:
        served = _served_model(client, name)
        probe = probe_server(client, name, tokenizer)
    except BaseException:
        client.close()
        raise
    probe["max_model_len"] = served.get("max_model_len")
    probe["max_logprobs"] = served.get("max_logprobs")
    metadata = {
        k: served.get(k)
        for k in ("id", "root", "max_model_len", "owned_by", "parent")
        if k in served
    }
    described = {"base_url": client.base_url, "model": name, "server": metadata}
    if folder is not None:
        described["tokenizer_sha256"] = model_fingerprint(folder)
    fingerprint = hashlib.sha256(
        json.dumps(described, sort_keys=True, default=str).encode()
    ).hexdigest()
    identity = ModelIdentity(
        name=display_name or name,
        kind=ModelKind.CAUSAL,
        fingerprint=fingerprint,
        backend="openai",
        numerics=(("add_bos", str(config.add_bos)),),
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
            ),  # fmt: skip
        ),
    )
    eos = model_eos_ids(folder) if folder is not None else set()
    return OpenAIBackend(client, name, tokenizer, identity, config, probe, eos)
