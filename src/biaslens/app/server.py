"""FastAPI server of ``biaslens app``: a static page and a small JSON API.

Why FastAPI and a hand-written page rather than Gradio: FastAPI and uvicorn are small,
already in the field's stack and install offline; the page is three forms and a plot, and
writing it with ``textContent`` only (never ``innerHTML``) makes escaping untrusted model output
a property of the code rather than of a framework version.

Hardening: request bodies are capped (``MAX_BODY`` bytes, 413 beyond), bad values are answered
with 4xx and a short message that never echoes the input or an exception's text, NaN and
infinity are refused, and a ``Host`` header other than the bound address is refused (400), so a
page on another site cannot reach the API through DNS rebinding.

Slow calls (the sweeps) answer with newline-delimited JSON: ``{"progress": done, "total": n}``
lines while the model works, then ``{"result": …}`` or ``{"error": …}``. One lock serialises
model calls, so concurrent users queue instead of interleaving batches.
"""

from __future__ import annotations

import base64
import io
import ipaddress
import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.middleware.trustedhost import TrustedHostMiddleware

from biaslens.app import tools
from biaslens.errors import BiaslensError
from biaslens.models.base import LM

MAX_BODY = 64 * 1024
"""Largest request body accepted (bytes)."""
log = logging.getLogger("biaslens.app")


class _Query(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")


class CidQuery(_Query):
    x: str = Field(max_length=tools.MAX_TEXT)
    x_prime: str = Field(max_length=tools.MAX_TEXT)
    lam: float = Field(ge=0, le=1000)
    max_new_tokens: int = Field(default=20, ge=1, le=64)


class DetectQuery(_Query):
    sentence: str = Field(max_length=tools.MAX_TEXT)
    threshold: float = Field(default=0.5, ge=0, le=100)


class DoseQuery(_Query):
    sentence: str = Field(max_length=tools.MAX_TEXT)
    values: list[str] = Field(default_factory=list, max_length=tools.MAX_VALUES)


class BodyLimit:
    """ASGI middleware: read the request body first (at most ``limit`` bytes, whether or not the
    client declared a Content-Length) and refuse a larger one with 413 before the app sees it."""

    def __init__(self, app, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await self._refuse(send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                return await self._refuse(send)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send) -> None:
        body = json.dumps({"error": f"request body over {self.limit} bytes"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def allowed_hosts(host: str) -> list[str]:
    """Host header values the app answers: the bound address and, for a loopback bind, the
    loopback names; any for a wildcard bind (0.0.0.0, ::), whose public name is unknown."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    names = {host}
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        names |= {"localhost", "127.0.0.1", "::1", "[::1]"}
    return sorted(names)


def _validation_message(error: RequestValidationError) -> str:
    """The first problem, naming the field and the rule, never echoing the input."""
    first = error.errors()[0] if error.errors() else {}
    field = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    message = str(first.get("msg", "invalid value"))
    return f"invalid {field}: {message[:200]}"


def sweep_plot(rows: list[dict], title: str) -> str:
    """PNG data URL: pronoun masses per swept value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 3.4))
    x = range(len(rows))
    for gender, color in (("female", "#c44e52"), ("male", "#4c72b0"), ("neutral", "#8c8c8c")):
        axis.plot(x, [r[f"p_{gender}"] for r in rows], marker="o", color=color, label=gender)
    axis.set_xticks(list(x), [str(r["value"]) for r in rows], rotation=60, fontsize=7)
    axis.set_ylabel("pronoun probability")
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def create_app(lm: LM, host: str = "127.0.0.1", port: int | None = None) -> FastAPI:
    """The app around one loaded model, answering requests addressed to ``host``."""
    app = FastAPI(title="biaslens", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host))
    app.add_middleware(BodyLimit, limit=MAX_BODY)
    lock = threading.Lock()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _validation_message(error)}, status_code=422)

    static = resources.files("biaslens.app") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    def locked(work: Callable):
        with lock:
            return work()

    def stream(work: Callable[[tools.ProgressCallback], dict]) -> StreamingResponse:
        events: queue.Queue = queue.Queue()

        def run() -> None:
            try:
                result = locked(lambda: work(lambda d, t: events.put({"progress": d, "total": t})))
                events.put({"result": result})
            except BiaslensError as error:
                events.put({"error": str(error)})
            except Exception:  # logged here; the client gets no internals
                log.exception("app request failed")
                events.put(
                    {"error": "internal error while computing the answer (see the server log)"}
                )
            events.put(None)

        def lines() -> Iterator[bytes]:
            threading.Thread(target=run, daemon=True).start()
            while (event := events.get()) is not None:
                yield (json.dumps(event) + "\n").encode()

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return (static / "index.html").read_text(encoding="utf-8")

    @app.get("/api/info")
    def info() -> dict:
        return {
            "model": lm.identity.name,
            "kind": lm.kind.value,
            "detector_dates": list(tools.DETECTOR_DATES),
        }

    @app.post("/api/cid")
    def cid(query: CidQuery):
        try:
            return locked(
                lambda: tools.cid_pair(lm, query.x, query.x_prime, query.lam, query.max_new_tokens)
            )
        except BiaslensError as error:
            return JSONResponse({"error": str(error)}, status_code=400)

    def invalid_input(check: Callable[[], object]) -> JSONResponse | None:
        """A 400 answer when the query's input is wrong, before anything streams."""
        try:
            check()
        except BiaslensError as error:
            return JSONResponse({"error": str(error)}, status_code=400)
        return None

    @app.post("/api/detect")
    def detect(query: DetectQuery):
        refused = invalid_input(lambda: tools.check_detect(query.sentence))
        if refused is not None:
            return refused

        def work(progress):
            result = tools.detect(lm, query.sentence, query.threshold, progress=progress)
            result["plot"] = sweep_plot(result["rows"], "pronoun probabilities by date")
            return result

        return stream(work)

    @app.post("/api/dose")
    def dose(query: DoseQuery):
        refused = invalid_input(lambda: tools.check_dose(query.sentence, query.values))
        if refused is not None:
            return refused

        def work(progress):
            result = tools.dose_response(lm, query.sentence, query.values, progress)
            title = f"pronoun probabilities by {result['slot'].strip('[]').lower()}"
            result["plot"] = sweep_plot(result["rows"], title)
            return result

        return stream(work)

    return app
