"""Async HTTP to an OpenAI-compatible server, called synchronously.

``concurrency`` requests in flight on a background event loop, a per-request timeout, retries
with exponential back-off and jitter on 429, 5xx, timeouts and broken connections (a server's
``Retry-After`` is honoured: the next attempt waits at least that long), and a one-line error
naming the server when retries run out. The API key is read from the
environment variable named by ``api_key_env`` and never written anywhere.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any

from biaslens import secrets
from biaslens.common.urls import redact_url, split_query, url_credentials
from biaslens.errors import BiaslensError
from biaslens.models.backends.openai.replies import ServerError
from biaslens.models.config import BackendConfig

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_RETRY_AFTER = 300.0
"""The longest ``Retry-After`` waited for (seconds); a longer one ends the run (it resumes)."""


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (a number of seconds or an HTTP date);
    None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None

    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff(attempt: int, asked: float | None) -> float:
    """Seconds before retry ``attempt`` (1, 2, …): exponential with jitter, at least what the
    server asked for."""
    wait = min(8.0, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random())
    return wait if asked is None else max(wait, asked)


_sleep = asyncio.sleep  # tests record the waits here


MAX_REPLY_BYTES = 32 * 2**20
"""The largest reply read: a top-20 for every step of a long generation is well under 1 MiB."""


class HTTPClient:
    """Async HTTP on a background event loop, called synchronously by the backend."""

    def __init__(self, config: BackendConfig) -> None:
        try:
            import httpx
        except ImportError:
            raise BiaslensError("the openai backend needs httpx: pip install httpx") from None
        self.httpx = httpx
        # with any user:password, for the requests; a query (?api_key=…) goes with every request
        self._url, self._params = split_query(config.options.base_url)
        self.base_url = redact_url(self._url)
        """The server's address as shown and recorded (no user name, password or query)."""
        self.timeout = float(config.options.timeout)
        self.retries = int(config.options.max_retries)
        self.concurrency = int(config.options.concurrency)
        self.key_env = key_variable(config.options)
        key = api_key(self.key_env)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        secrets.hold(key, *(value for _, value in self._params))
        secrets.hold_credentials(*url_credentials(self._url))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._client = self._call(self._make_client())
        self._semaphore = self._call(self._make_semaphore())

    async def _make_client(self):
        limits = self.httpx.Limits(max_connections=self.concurrency * 2)
        return self.httpx.AsyncClient(
            timeout=self.timeout, limits=limits, headers=self._headers, params=self._params
        )

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
        problem, asked = "", None
        for attempt in range(self.retries + 1):
            if attempt:
                await _sleep(backoff(attempt, asked))
                asked = None
            try:
                async with self._semaphore:
                    response = await asyncio.wait_for(
                        self._fetch(method, f"{self._url}{path}", payload), self.timeout
                    )
            except (self.httpx.TimeoutException, asyncio.TimeoutError):
                problem = f"no whole answer within {self.timeout:g} s"
                continue
            except self.httpx.TransportError as error:
                problem = self.redact(f"connection failed ({type(error).__name__}: {error})")
                continue
            if response.status_code in (401, 403):
                raise ServerError(
                    f"{url}: the server refused the API key (HTTP {response.status_code}); set "
                    f"${self.key_env} to a valid key"
                )
            if response.status_code in RETRY_STATUS:
                problem = f"HTTP {response.status_code}"
                asked = retry_after(response.headers.get("retry-after"))
                if asked is not None and asked > MAX_RETRY_AFTER:
                    raise ServerError(
                        f"{url}: HTTP {response.status_code}, the server asks to wait "
                        f"{asked:.0f} s (Retry-After); finished answers are kept in the run's "
                        "cache, rerun the same command to resume later"
                    )
                continue
            if response.status_code >= 400:
                said = self.redact(_message(response))
                raise ServerError(f"{url}: HTTP {response.status_code}: {said}")
            try:
                return response.json()
            except ValueError:
                problem = "the answer is not valid JSON"
                continue
        raise ServerError(
            f"{url}: {problem} after {self.retries + 1} attempt(s); finished answers are kept in "
            "the run's cache, rerun the same command to resume once the server is back"
        )

    async def _fetch(self, method: str, url: str, payload: dict | None):
        """The response with its body read, refused past :data:`MAX_REPLY_BYTES` (a reply is
        read as it arrives, never held whole when it is larger than any real answer)."""
        async with self._client.stream(method, url, json=payload) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
                raise ServerError(self._too_large(url, int(declared)))
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_REPLY_BYTES:
                    raise ServerError(self._too_large(url, len(body)))
            # read: .json() and .text work on it; what the server echoes of a secret (the
            # key, the URL's password, its Basic credentials) is gone before anything reads it
            response._content = secrets.redact_bytes(bytes(body))
            return response

    def _too_large(self, url: str, size: int) -> str:
        return (
            f"{redact_url(url)}: the reply is over {MAX_REPLY_BYTES // 2**20} MiB ({size:,} bytes "
            "so far); no answer biaslens asks for is that large, so it was not read"
        )

    def redact(self, text: str) -> str:
        """``text`` without any secret the process holds (:mod:`biaslens.secrets`)."""
        return secrets.redact(text)

    def close(self) -> None:
        try:
            self._call(self._client.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()


DEFAULT_KEY_VARIABLE = "OPENAI_API_KEY"
"""Where the openai backend reads its key when ``--api-key-env`` names no other variable."""


def key_variable(options) -> str:
    """The environment variable the openai backend reads its API key from."""
    return options.api_key_env or DEFAULT_KEY_VARIABLE


def api_key(variable: str | None) -> str | None:
    """The API key from the environment variable named ``variable``, without surrounding
    whitespace (a key read from a file keeps its newline). A key an HTTP header cannot carry
    (a line break inside it, a non-ASCII character) is refused in one line that does not show
    it."""
    if not variable:
        return None
    key = (os.environ.get(variable) or "").strip()
    if key and not all(33 <= ord(c) <= 126 for c in key):
        raise BiaslensError(
            f"the API key in ${variable} holds characters an HTTP header cannot carry (a "
            "space or line break inside it, or a non-ASCII character); the key is not shown: "
            "check how it was set"
        )
    return key or None


def _message(response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]


class ServedBy:
    """What a backend on an OpenAI-compatible endpoint keeps of its server: the HTTP client,
    the model's name there, and how many answers it asks for at once (and commits to a run's
    cache together as they complete): a few per request in flight."""

    def connect(self, client: HTTPClient, model: str, concurrency: int) -> None:
        self.client = client
        self.model = model
        self.chunk_size = max(8, 4 * concurrency)
        self.cache_chunk_size = self.chunk_size
        """Answers are committed to a run's cache in chunks this size as they complete."""

    def close(self) -> None:
        self.client.close()
