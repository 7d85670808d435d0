"""A model of inspect_ai's model layer, asked as biaslens asks a chat endpoint.

:class:`InspectClient` takes the payloads the chat backend sends to ``/chat/completions``
(messages, temperature, top-p, ``max_tokens``, ``n``, seed, top log-probabilities) and answers
each through ``inspect_ai.model.get_model(...).generate(...)``: the provider's own API, with
inspect's connection limit, retries and, with ``--batch``, its batch mode. Each answer comes
back in the shape of a chat completion, so that every check of the chat backend (refusals,
replies of another model, steps without log-probabilities, a temperature that is ignored)
reads it as it reads a server's.

inspect's own response cache is left off: biaslens's request cache keys each answer by the
model's identity, the request and its seed, and is the one a rerun reads.
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings

from biaslens import secrets
from biaslens.common.urls import redact_url
from biaslens.errors import BiaslensError
from biaslens.models.runtime.reply_checks import ServerError

BATCH_PROVIDERS = ("openai", "anthropic", "google", "together", "grok")
"""The inspect providers with a batch mode (inspect_ai 0.3.285); elsewhere ``--batch`` would
be ignored, so it is refused."""
FINISH_REASONS = {
    "max_tokens": "length",
    "model_length": "length",
    "content_filter": "content_filter",
}
"""inspect's stop reasons as a chat completion names them (any other: ``stop``)."""


def inspect_model_api():
    """inspect_ai's model layer, or one line saying how to install it."""
    try:
        from inspect_ai import model
    except ImportError:
        raise BiaslensError(
            "--backend inspect needs inspect_ai: pip install 'biaslens[inspect]'"
        ) from None
    return model


class InspectClient:
    """One inspect model on a background event loop, called synchronously (as the chat
    backend calls its HTTP client): :meth:`post_many` answers chat payloads."""

    def __init__(self, name: str, options) -> None:
        self.api = inspect_model_api()
        self.name = name
        self.options = options
        self.base_url = f"inspect model {name}" + (
            f" at {redact_url(options.base_url)}" if options.base_url else ""
        )
        """How the model is named in messages (never with a key or password)."""
        key = os.environ.get(options.api_key_env) if options.api_key_env else None
        if options.api_key_env and not key:
            raise BiaslensError(
                f"--api-key-env {options.api_key_env}: ${options.api_key_env} is not set; set "
                "it to the provider's key, or leave --api-key-env out to use the provider's own "
                "variable"
            )
        secrets.hold(key)
        provider = name.split("/")[0]
        if options.batch and provider not in BATCH_PROVIDERS:
            raise BiaslensError(
                f"--batch: inspect's {provider} provider has no batch mode (those that do: "
                f"{', '.join(BATCH_PROVIDERS)}); run without --batch"
            )
        self.batch = options.batch
        self.short_replies_said = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        try:
            self.model = self._call(self._open(key))
        except BaseException:
            self._stop()
            raise

    async def _open(self, key: str | None):
        config = self.api.GenerateConfig(
            max_connections=self.options.concurrency,
            max_retries=self.options.max_retries,
            timeout=int(max(1, round(self.options.timeout))),
        )
        try:
            return self.api.get_model(
                self.name,
                config=config,
                base_url=self.options.base_url,
                api_key=key,
                memoize=False,
                **dict(self.options.model_args),
            )
        except Exception as error:  # inspect's PrerequisiteError, ValueError, a provider's own
            raise BiaslensError(
                f"inspect cannot open the model {self.name!r}: {_said(error)} (inspect names "
                "models as provider/model, e.g. anthropic/claude-3-5-haiku-latest, "
                "openai-api/<service>/<model> with --base-url)"
            ) from None

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def post_many(self, path: str, payloads: list[dict]) -> list[dict]:
        """Each chat payload answered by the model, as a chat completion; ``path`` is the chat
        endpoint's (the only one asked)."""
        if path != "/chat/completions":
            raise BiaslensError(f"--backend inspect asks chat models only, not {path}")

        async def gather():
            return await asyncio.gather(*(self._generate(p) for p in payloads))

        return self._call(gather()) if payloads else []

    async def _generate(self, payload: dict) -> dict:
        messages = [self._message(m) for m in payload["messages"]]
        asked = payload.get("n") or 1
        config = self.api.GenerateConfig(
            temperature=payload.get("temperature"),
            top_p=payload.get("top_p"),
            max_tokens=payload.get("max_tokens"),
            seed=payload.get("seed"),
            num_choices=asked if asked > 1 else None,
            logprobs=payload.get("logprobs"),
            top_logprobs=payload.get("top_logprobs"),
            batch=self.batch or None,
        )
        try:
            output = await self.model.generate(messages, config=config, cache=False)
        except Exception as error:  # the provider's error after inspect's own retries
            raise ServerError(
                f"{self.base_url}: {_said(error)} (after inspect's retries); finished answers "
                "are kept in the run's cache, rerun the same command to resume"
            ) from None
        if output.error:
            raise ServerError(
                f"{self.base_url}: the provider answered with an error: "
                f"{secrets.redact(str(output.error))}"
            )
        if asked > 1 and len(output.choices) < asked and not self.short_replies_said:
            self.short_replies_said = True
            warnings.warn(
                f"{self.base_url} gives {len(output.choices)} reply per call where {asked} were "
                "asked: the missing replies are drawn one per call",
                stacklevel=2,
            )
        return completion(output, self.name, self.model.api.model_name)

    def _message(self, message: dict):
        kinds = {"system": self.api.ChatMessageSystem, "user": self.api.ChatMessageUser}
        return kinds[message["role"]](content=message["content"])

    def close(self) -> None:
        try:
            self._call(self.model.api.aclose())
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()


def completion(output, name: str, service_name: str) -> dict:
    """An inspect ``ModelOutput`` as a chat completion: each choice's text, finish reason and
    per-step top log-probabilities. The reply names the model as biaslens asked for it when
    the provider reports the model asked (or a dated snapshot of it), else as the provider
    reports it (so that the chat backend's check sees replies of another model)."""
    reported = output.model or ""
    asked = {service_name, service_name.split("/")[-1]}
    same = not reported or any(reported == a or reported.startswith(a + "-") for a in asked)
    return {
        "model": name if same else reported,
        "choices": [_choice(i, choice) for i, choice in enumerate(output.choices)],
    }


def _choice(index: int, choice) -> dict:
    filtered = choice.stop_reason == "content_filter"
    return {
        "index": index,
        "message": {
            "role": "assistant",
            "content": choice.message.text,
            "refusal": "the provider's content filter" if filtered else None,
        },
        "finish_reason": FINISH_REASONS.get(choice.stop_reason, "stop"),
        "logprobs": _logprobs(choice.logprobs),
    }


def _logprobs(logprobs) -> dict | None:
    if logprobs is None or not logprobs.content:
        return None
    return {
        "content": [
            {
                "token": step.token,
                "logprob": step.logprob,
                "bytes": step.bytes,
                "top_logprobs": [
                    {"token": t.token, "logprob": t.logprob, "bytes": t.bytes}
                    for t in (step.top_logprobs or [])
                ],
            }
            for step in logprobs.content
        ]
    }


def _said(error: BaseException) -> str:
    """An exception in one line, without any secret the process holds."""
    text = " ".join(str(error).split()) or type(error).__name__
    text = text.replace("[bold]", "").replace("[/bold]", "")
    return secrets.redact(f"{type(error).__name__}: {text}"[:400])
