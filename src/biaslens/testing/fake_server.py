"""A small OpenAI-compatible completions server around a transformers causal model.

It answers ``/v1/models``, ``/v1/completions`` and ``/v1/chat/completions`` as vLLM's server
does for what biaslens asks (token-id prompts, ``echo`` with prompt log-probabilities,
``logprobs=k``, greedy ``max_tokens``, ``ignore_eos``, ``return_tokens_as_token_ids``,
``logprob_token_ids``; chat messages with ``top_logprobs``), with
log-probabilities computed by a real forward pass of the model. Tests use it to check the
``openai`` backend against the ``hf`` backend on a tiny model, and to break the protocol on
purpose: ``faults`` makes the server return log-probabilities shifted by one position (as
llama.cpp does), none at all, or require an API key.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from contextlib import contextmanager

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from biaslens.testing.fake_faults import Faults, logprobs_rows
from biaslens.testing.fake_sampling import chat_sample, complete_sampled

TOKEN_PREFIX = "token_id:"


def _token(tokenizer, token_id: int, as_ids: bool, faults: Faults | None = None) -> str:
    if faults is not None and faults.token_text is not None:
        return faults.token_text
    return f"{TOKEN_PREFIX}{token_id}" if as_ids else tokenizer.decode([token_id])


def complete(model, tokenizer, body: dict, faults: Faults) -> dict:
    """One ``/v1/completions`` answer (every prompt of the request, greedy; drawn at a
    temperature above 0, :func:`complete_sampled`)."""
    if float(body.get("temperature") or 0) > 0 and faults.sampling != "greedy":
        return complete_sampled(model, tokenizer, body, faults)
    if not faults.completion_logprobs:
        body = {k: v for k, v in body.items() if k not in ("logprobs", "echo", "logprob_token_ids")}
    prompts = body["prompt"]
    if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
        prompts = [prompts]
    k = body.get("logprobs")
    as_ids = bool(body.get("return_tokens_as_token_ids")) and faults.token_ids
    wanted = (
        body.get("logprob_token_ids")
        if faults.token_ids and not faults.ignore_logprob_token_ids
        else None
    )
    max_tokens = int(body.get("max_tokens", 16))
    eos = tokenizer.eos_token_id
    choices = []
    for index, prompt in enumerate(prompts):
        ids = tokenizer(prompt)["input_ids"] if isinstance(prompt, str) else list(prompt)
        generated, tops, token_logprobs = [], [], []
        context = list(ids)
        for _ in range(max_tokens):
            row = logprobs_rows(model, context)[-1]
            token = int(row.argmax())
            generated.append(token)
            token_logprobs.append(float(row[token]))
            if wanted:
                chosen = {int(t): float(row[int(t)]) for t in wanted}
                chosen[token] = float(row[token])
                tops.append({_token(tokenizer, t, as_ids, faults): v for t, v in chosen.items()})
            elif k:
                values, indices = row.topk(int(k))
                tops.append(
                    {
                        _token(tokenizer, int(t), as_ids, faults): float(v)
                        for v, t in zip(values, indices, strict=True)
                    }
                )
            context.append(token)
            if token == eos and not body.get("ignore_eos"):
                break
        logprobs = None
        if k is not None or wanted:
            logprobs = {
                "tokens": [_token(tokenizer, t, as_ids, faults) for t in generated],
                "token_logprobs": token_logprobs,
                "top_logprobs": tops,
                "text_offset": [],
            }
            if body.get("echo"):
                rows = logprobs_rows(model, ids)
                echoed = [None] + [float(rows[j - 1, ids[j]]) for j in range(1, len(ids))]
                if faults.echo == "shifted":
                    echoed = echoed[1:] + [None]
                elif faults.echo == "missing":
                    echoed = [None] * len(ids)
                logprobs["tokens"] = [_token(tokenizer, t, as_ids, faults) for t in ids] + logprobs[
                    "tokens"
                ]
                logprobs["token_logprobs"] = echoed + token_logprobs
                logprobs["top_logprobs"] = [None] * len(ids) + tops
        text = tokenizer.decode(generated, skip_special_tokens=True)
        if body.get("echo"):
            text = tokenizer.decode(ids) + text
        choices.append(
            {"index": index, "text": text, "logprobs": logprobs, "finish_reason": "length"}
        )
    return {"object": "text_completion", "model": body.get("model"), "choices": choices}


def chat_complete(model, tokenizer, body: dict, faults: Faults) -> dict:
    """One ``/v1/chat/completions`` answer: the messages in the tokenizer's chat template, greedy
    up to ``max_tokens`` or the EOS (whose step is listed, as vLLM lists it); with a
    temperature above 0, ``n`` replies drawn from the model (:func:`chat_sample`)."""
    text = tokenizer.apply_chat_template(
        body["messages"], add_generation_prompt=True, tokenize=False
    )
    context = tokenizer(text, add_special_tokens=False)["input_ids"]
    if float(body.get("temperature") or 0) > 0 and faults.sampling != "greedy":
        return chat_sample(model, tokenizer, context, body, faults)
    k = int(body.get("top_logprobs") or 0) if body.get("logprobs") else 0
    if faults.chat == "fewer":
        k = max(k - 1, 0)
    steps, generated = [], []
    max_tokens = int(body.get("max_tokens", 16))
    if faults.chat == "overlong":
        max_tokens = max_tokens * 3 + 1
    if faults.chat == "empty-after-probe" and max_tokens > 1:  # the load probe asks for 1
        max_tokens = 0
    for _ in range(max_tokens):
        row = logprobs_rows(model, context)[-1]
        token = int(row.argmax())
        values, indices = row.topk(k) if k else (torch.zeros(0), torch.zeros(0, dtype=torch.long))
        steps.append(
            {
                **_chat_entry(tokenizer, token, float(row[token]), faults),
                "top_logprobs": [
                    _chat_entry(tokenizer, int(t), float(v), faults)
                    for v, t in zip(values, indices, strict=True)
                ],
            }
        )
        if faults.chat == "duplicate" and steps[-1]["top_logprobs"]:
            steps[-1]["top_logprobs"].append(dict(steps[-1]["top_logprobs"][0]))
        if faults.chat_logprob is not None:
            for entry in [steps[-1], *steps[-1]["top_logprobs"]]:
                entry["logprob"] = faults.chat_logprob
        generated.append(token)
        context.append(token)
        if token == tokenizer.eos_token_id and faults.chat != "overlong":
            break
    message = {
        "role": "assistant",
        "content": tokenizer.decode(generated, skip_special_tokens=True),
    }
    logprobs = {"content": steps} if body.get("logprobs") and faults.chat != "no-logprobs" else None
    if faults.chat == "refusal":
        message, logprobs = {"role": "assistant", "content": None, "refusal": "I can't."}, None
    choice = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": "stop"}
    return {"object": "chat.completion", "model": body.get("model"), "choices": [choice]}


def _chat_entry(tokenizer, token_id: int, logprob: float, faults: Faults) -> dict:
    text = tokenizer.decode([token_id])
    entry = {"token": text, "logprob": logprob}
    if faults.chat != "no-bytes":
        entry["bytes"] = list(text.encode("utf-8"))
    return entry


def create_app(model, tokenizer, name: str, faults: Faults | None = None, max_model_len=None):
    faults = faults or Faults()
    app = FastAPI()
    lock = threading.Lock()

    def authorized(request: Request) -> bool:
        return (
            faults.api_key is None
            or request.headers.get("authorization") == f"Bearer {faults.api_key}"
        )

    @app.get("/v1/models")
    def models(request: Request):
        if not authorized(request):
            return JSONResponse({"error": {"message": "invalid api key"}}, status_code=401)
        if faults.models_reply is not None:
            return JSONResponse(faults.models_reply)
        return {
            "data": [{"id": name, "object": "model", "root": name, "max_model_len": max_model_len}]
        }

    async def accepted(request: Request):
        """The request's body, or the error reply (no key, another model)."""
        if not authorized(request):
            return None, JSONResponse({"error": {"message": "invalid api key"}}, status_code=401)
        body = await request.json()
        faults.requests.append(body)
        if faults.echo_key:
            return None, _echoing(request, faults.echo_key)
        if body.get("model") != name:
            return None, JSONResponse({"error": {"message": "model not found"}}, status_code=404)
        return body, None

    def answered(answer):
        """An endpoint: the request refused as the server would, or ``answer(body)`` (one
        forward pass at a time)."""

        async def endpoint(request: Request):
            body, refused = await accepted(request)
            if refused is not None:
                return refused
            with lock:
                return answer(body)

        return endpoint

    def completion(body: dict):
        answer = complete(model, tokenizer, body, faults)
        if faults.logprob is None:
            return answer
        return Response(
            json.dumps(_overwrite_logprobs(answer, faults.logprob)),
            200,
            media_type="application/json",
        )

    def chat(body: dict):
        if faults.fail_after is not None and len(faults.requests) > faults.fail_after:
            headers = {"Retry-After": faults.retry_after} if faults.retry_after else None
            return JSONResponse({"error": {"message": "slow down"}}, faults.fail_status, headers)
        answer = chat_complete(model, tokenizer, body, faults)
        if faults.sampling == "non-utf8" and float(body.get("temperature") or 0) > 0:
            text = json.dumps(answer).encode().replace(b'"content": "', b'"content": "\xff\xfe', 1)
            return Response(text, 200, media_type="application/json")
        return answer

    app.post("/v1/completions")(answered(completion))
    app.post("/v1/chat/completions")(answered(chat))

    return app


def _echoing(request: Request, mode: bool | str) -> JSONResponse:
    """The reply of a server that echoes what the caller sent (:attr:`Faults.echo_key`)."""
    header = request.headers.get("authorization") or ""
    if mode == "200":
        key = header.removeprefix("Bearer ")
        return JSONResponse({"error": {"message": f"bad key {key}", "type": "auth"}})
    said = f"bad request, headers: {header}"
    if mode == "request":
        said = f"bad request: auth={header}"
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            said += f"; user {user}, password {password}"
    return JSONResponse({"error": {"message": said}}, status_code=400)


def _overwrite_logprobs(answer: dict, value: float) -> dict:
    """The answer with every log-probability replaced (json.dumps writes NaN / Infinity)."""
    for choice in answer["choices"]:
        logprobs = choice.get("logprobs")
        if not logprobs:
            continue
        logprobs["token_logprobs"] = [
            None if v is None else value for v in logprobs["token_logprobs"]
        ]
        logprobs["top_logprobs"] = [
            None if step is None else dict.fromkeys(step, value)
            for step in logprobs["top_logprobs"]
        ]
    return answer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serve_app(app, port: int | None = None):
    """Run the ASGI ``app`` with uvicorn in a thread on 127.0.0.1 (a free port unless
    ``port``); yields its address, ``http://127.0.0.1:PORT``, and stops it after."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serve(app, port: int | None = None):
    """Run the fake server ``app`` (see :func:`serve_app`); yields the base URL (``…/v1``)."""
    with serve_app(app, port) as address:
        yield f"{address}/v1"
