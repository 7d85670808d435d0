"""FastAPI server of ``biaslens app``: a static page and a small JSON API.

Why FastAPI and a hand-written page rather than Gradio: FastAPI and uvicorn are small,
already in the field's stack and install offline; the page is three forms and a plot, and
writing it with ``textContent`` only (never ``innerHTML``) makes escaping untrusted model output
a property of the code rather than of a framework version.

Slow calls (the sweeps) answer with newline-delimited JSON: ``{"progress": done, "total": n}``
lines while the model works, then ``{"result": …}`` or ``{"error": …}``. One lock serialises
model calls, so concurrent users queue instead of interleaving batches.
"""

from __future__ import annotations

import base64
import io
import json
import queue
import threading
from collections.abc import Callable, Iterator
from importlib import resources

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from biaslens.app import tools
from biaslens.errors import BiaslensError
from biaslens.models.base import LM


class CidQuery(BaseModel):
    x: str = Field(max_length=tools.MAX_TEXT)
    x_prime: str = Field(max_length=tools.MAX_TEXT)
    lam: float = Field(ge=0, le=1000)
    max_new_tokens: int = Field(default=20, ge=1, le=64)


class DetectQuery(BaseModel):
    sentence: str = Field(max_length=tools.MAX_TEXT)
    threshold: float = Field(default=0.5, ge=0)


class DoseQuery(BaseModel):
    sentence: str = Field(max_length=tools.MAX_TEXT)
    values: list[str] = Field(default_factory=list, max_length=tools.MAX_VALUES)


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


def create_app(lm: LM) -> FastAPI:
    """The app around one loaded model."""
    app = FastAPI(title="biaslens", docs_url=None, redoc_url=None)
    lock = threading.Lock()
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
            except Exception as error:  # shown to the user, not a traceback page
                events.put({"error": f"{type(error).__name__}: {error}"})
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

    @app.post("/api/detect")
    def detect(query: DetectQuery):
        def work(progress):
            result = tools.detect(lm, query.sentence, query.threshold, progress=progress)
            result["plot"] = sweep_plot(result["rows"], "pronoun probabilities by date")
            return result

        return stream(work)

    @app.post("/api/dose")
    def dose(query: DoseQuery):
        def work(progress):
            result = tools.dose_response(lm, query.sentence, query.values, progress)
            title = f"pronoun probabilities by {result['slot'].strip('[]').lower()}"
            result["plot"] = sweep_plot(result["rows"], title)
            return result

        return stream(work)

    return app
