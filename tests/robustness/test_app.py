"""The explorer app's API under hostile requests: capped bodies, no NaN or infinity, no echo of
the input or of an exception, and no answer to a foreign Host header."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

import pytest

from tests.app.conftest import serve


@pytest.fixture(scope="module")
def app(tiny_backends):
    with serve(tiny_backends["llama"]) as url:
        parsed = urlparse(url)
        yield parsed.hostname, parsed.port


def request(app, method, path, body=b"", headers=None):
    host, port = app
    connection = http.client.HTTPConnection(host, port, timeout=60)
    connection.request(
        method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
    )
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    return response.status, payload


def test_a_large_body_is_refused_without_being_echoed(app):
    huge = json.dumps({"x": "a" * 10_000_000, "x_prime": "b", "lam": 1}).encode()
    status, payload = request(app, "POST", "/api/cid", huge)
    assert status == 413 and len(payload) < 200


def test_a_large_chunked_body_is_refused(app):
    host, port = app
    connection = http.client.HTTPConnection(host, port, timeout=60)
    chunks = (b"x" * 65536 for _ in range(4))
    connection.request(
        "POST",
        "/api/cid",
        body=chunks,
        headers={"Content-Type": "application/json"},
        encode_chunked=True,
    )
    response = connection.getresponse()
    assert response.status == 413 and len(response.read()) < 200


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/cid", '{"x": "a", "x_prime": "b", "lam": NaN}'),
        ("/api/cid", '{"x": "a", "x_prime": "b", "lam": Infinity}'),
        ("/api/detect", '{"sentence": "The nurse said [MASK] left.", "threshold": Infinity}'),
        ("/api/detect", '{"sentence": "The nurse said [MASK] left.", "threshold": NaN}'),
        ("/api/cid", '{"x": "a", "x_prime": "b", "lam": 1, "max_new_tokens": 100000}'),
        (
            "/api/dose",
            '{"sentence": "In [DATE], [MASK] left.", "values": ' + json.dumps(["1"] * 500) + "}",
        ),
        ("/api/detect", json.dumps({"sentence": "[MASK] " + "word " * 2000})),
        ("/api/cid", json.dumps({"x": "SECRET-INPUT " * 200, "x_prime": "b", "lam": 1})),
        ("/api/cid", "{not json"),
        ("/api/cid", '{"x": "a", "x_prime": "b", "lam": 1, "unknown": 2}'),
    ],
    ids=[
        "lam NaN",
        "lam inf",
        "threshold inf",
        "threshold NaN",
        "tokens",
        "values",
        "long sentence",
        "long x",
        "bad JSON",
        "unknown field",
    ],  # fmt: skip
)
def test_bad_values_get_4xx_and_a_short_message(app, path, body):
    status, payload = request(app, "POST", path, body.encode())
    assert 400 <= status < 500, payload[:300]
    message = json.loads(payload)["error"]
    assert len(message) < 300 and "SECRET-INPUT" not in message and "Traceback" not in message


def test_a_foreign_host_header_is_refused(app):
    status, _ = request(app, "GET", "/api/info", headers={"Host": "evil.example:80"})
    assert status == 400
    status, _ = request(app, "GET", "/api/info", headers={"Host": f"127.0.0.1:{app[1]}"})
    assert status == 200
    status, _ = request(app, "GET", "/api/info", headers={"Host": f"localhost:{app[1]}"})
    assert status == 200


def test_a_failure_inside_the_model_reports_no_internals(app, monkeypatch):
    from biaslens.app import tools

    def broken(*args, **kwargs):
        raise RuntimeError("/secret/path/in/the/exception")

    monkeypatch.setattr(tools, "pronoun_masses", broken)
    status, payload = request(
        app, "POST", "/api/detect", json.dumps({"sentence": "The nurse said [MASK] left."}).encode()
    )
    last = json.loads(payload.decode().strip().splitlines()[-1])
    assert status == 200 and "internal error" in last["error"] and "/secret/" not in last["error"]
