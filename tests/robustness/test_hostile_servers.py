"""Hostile or broken servers: a reply that drips a byte at a time is cut at --timeout in all, a
reply larger than any answer is not read, and a model id holding terminal escape sequences is
shown escaped, never acted on by the terminal."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

import pytest

from biaslens.cli.render import visible
from biaslens.models.backends.openai.http_client import MAX_REPLY_BYTES, HTTPClient
from biaslens.models.backends.openai.replies import ServerError
from biaslens.models.config import BackendConfig
from tests.support.hub_server import serve_handler


@contextmanager
def raw_server(reply):
    """A server on 127.0.0.1 whose every GET is answered by ``reply(handler)``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            try:
                reply(self)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args):
            pass

    with serve_handler(Handler) as url:
        yield f"{url}/v1"


def client(url: str, **options) -> HTTPClient:
    return HTTPClient(BackendConfig(backend="openai", base_url=url, max_retries=0, **options))


def test_a_reply_that_drips_is_cut_at_the_timeout_in_all():
    def drip(handler):
        body = json.dumps({"data": [{"id": "m"}]}).encode()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for byte in body:  # one byte every 0.2 s: each read is quick, the whole is not
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.2)

    with raw_server(drip) as url:
        http = client(url, timeout=1.0)
        started = time.monotonic()
        try:
            with pytest.raises(ServerError, match=r"no whole answer within 1 s after 1 attempt"):
                http.get("/models")
        finally:
            http.close()
        assert time.monotonic() - started < 5


@pytest.mark.parametrize("declared", [True, False])
def test_a_reply_larger_than_any_answer_is_not_read(declared):
    size = MAX_REPLY_BYTES + 4 * 2**20

    def huge(handler):
        handler.send_response(200)
        if declared:
            handler.send_header("Content-Length", str(200 * 2**20))
        else:
            handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        block = b" " * 2**20
        for _ in range(size // len(block)):
            if declared:
                handler.wfile.write(block)
            else:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))

    with raw_server(huge) as url:
        http = client(url, timeout=30.0)
        try:
            with pytest.raises(
                ServerError, match=f"the reply is over {MAX_REPLY_BYTES // 2**20} MiB"
            ):
                http.get("/models")
        finally:
            http.close()


def test_a_model_id_with_escape_sequences_is_shown_escaped(monkeypatch, capsys):
    from tests.test_cli import run_cli

    evil = "evil\x1b[2J\x1b]0;owned\x07\u202emodel"

    def models(handler):
        body = json.dumps({"data": [{"id": evil}]}).encode()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with raw_server(models) as url:
        code, _, err = run_cli(
            monkeypatch, capsys, "run", "sib-mgc", "--backend", "openai", "--base-url", url,
            "-m", "other", "--mode", "paper", "--limit", "1",
        )  # fmt: skip
    assert code != 0 and "does not serve a model named" in err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert visible(evil) in err and "\\x1b[2J" in err


def test_visible_escapes_controls_and_keeps_text():
    assert visible("She said: «ça va?» 🙂") == "She said: «ça va?» 🙂"
    assert visible("a\x00b\nc\x9bd") == "a\\x00b\\nc\\x9bd"
