"""A fault-injecting HTTP proxy for tests of served backends.

It forwards every request to an upstream server, except that the next requests can be made to
fail on purpose, one fault per request from ``plan``: ``"429"`` / ``"500"`` (that status;
``"429:N"`` adds ``Retry-After: N``),
``"garbage"`` (200 with a body that is not JSON), ``"stall"`` (no answer for ``stall_seconds``),
``"drop"`` (the connection closed without an answer). ``down = True`` makes every request
fail as a dead server would; ``down_after = N`` does so once N requests have gone through.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import deque
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.plan: deque[str] = deque()
        self.down = False
        self.down_after: int | None = None
        self.stall_seconds = 5.0
        self.forwarded = 0
        self.faults = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy.down_after is not None and proxy.forwarded >= proxy.down_after:
                    proxy.down = True
                fault = "drop" if proxy.down else (proxy.plan.popleft() if proxy.plan else None)
                if fault is not None:
                    proxy.faults += 1
                    return proxy._fail(self, fault)
                request = urllib.request.Request(
                    proxy.upstream + self.path,
                    data=body,
                    method=self.command,
                    headers={k: v for k, v in self.headers.items() if k.lower() != "host"},
                )
                try:
                    with urllib.request.urlopen(request, timeout=600) as response:
                        status, payload = response.status, response.read()
                        kind = response.headers.get("content-type", "application/json")
                except urllib.error.HTTPError as error:
                    status, payload = error.code, error.read()
                    kind = error.headers.get("content-type", "application/json")
                proxy.forwarded += 1
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _handle
            do_POST = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def _fail(self, handler, fault: str) -> None:
        status, _, wait = fault.partition(":")
        if status in ("429", "500", "503"):
            body = b'{"error": {"message": "injected"}}'
            handler.send_response(int(status))
            if wait:
                handler.send_header("retry-after", wait)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        elif fault == "garbage":
            body = b"<html>not json"
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        elif fault == "stall":
            time.sleep(self.stall_seconds)
            handler.close_connection = True
        else:  # drop
            handler.close_connection = True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def fault_proxy(upstream: str):
    proxy = FaultProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()
