"""A machine without a network is told so at once: a failed name look-up is not retried."""

from __future__ import annotations

import pytest

from biaslens.errors import BiaslensError
from biaslens.models.checkpoints import hub


def test_a_name_that_does_not_resolve_is_one_line_without_retries(monkeypatch):
    import httpx

    calls = []

    def call():
        calls.append(1)
        try:
            raise OSError("[Errno -2] Name or service not known")
        except OSError as cause:
            raise httpx.ConnectError("connection failed") from cause

    monkeypatch.setattr(hub.time, "sleep", lambda s: pytest.fail("retried an offline machine"))
    with pytest.raises(BiaslensError, match="cannot be reached .*looks offline"):
        hub._with_retries("model 'org/x'", call)
    assert calls == [1]


def test_a_dropped_connection_is_still_retried(monkeypatch):
    import httpx

    calls, slept = [], []

    def call():
        calls.append(1)
        if len(calls) < 2:
            raise httpx.ConnectError("connection refused")
        return "ok"

    monkeypatch.setattr(hub.time, "sleep", slept.append)
    assert hub._with_retries("model 'org/x'", call) == "ok"
    assert len(calls) == 2 and len(slept) == 1
