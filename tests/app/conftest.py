"""A live app server (uvicorn in a thread) on a free local port."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

import pytest


@contextmanager
def serve(lm):
    import uvicorn

    from biaslens.app.server import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(lm), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the app server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def app_url(tiny_backends):
    """The app on the tiny causal model."""
    with serve(tiny_backends["llama"]) as url:
        yield url
