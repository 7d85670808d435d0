"""A live app server (uvicorn in a thread) on a free local port."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from biaslens.testing.fake_server import serve_app


@contextmanager
def serve(lm):
    from biaslens.app.server import create_app

    with serve_app(create_app(lm)) as url:
        yield url


@pytest.fixture(scope="module")
def app_url(tiny_backends):
    """The app on the tiny causal model."""
    with serve(tiny_backends["llama"]) as url:
        yield url
