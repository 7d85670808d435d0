"""No secret the run holds reaches the terminal, a file or the request cache, whatever a server
echoes: a 200 reply whose error body quotes the key, a 400 that echoes the request (Basic
credentials from the URL's ``user:password@``, the password decoded), in clear or in base64.
Each case runs the real CLI in a child process against the tests' OpenAI-compatible server,
then greps its output and every file it wrote for every form of every secret."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest

from biaslens import secrets
from tests.conftest import SERVED_NAME

KEY = "sk-EchoedKeyThatMustNeverBeShown42"
USER, PASSWORD = "alice", "pw-EchoedPassword-7x"


def _forms(secret: str) -> list[bytes]:
    """The secret in clear and in base64 (standard, unpadded), as bytes."""
    raw = secret.encode()
    encoded = base64.b64encode(raw)
    return [raw, encoded, encoded.rstrip(b"=")]


def _run(served, tmp_path, base_url: str, mode: str) -> subprocess.CompletedProcess:
    served["faults"].echo_key = mode
    env = {**os.environ, "BIASLENS_TEST_ECHO_KEY": KEY, "HOME": str(tmp_path / "home"),
           "NO_COLOR": "1"}  # fmt: skip
    try:
        return subprocess.run(
            [sys.executable, "-m", "biaslens", "run", "sib-mgc", "--model", SERVED_NAME,
             "--backend", "openai", "--base-url", base_url, "--api-key-env",
             "BIASLENS_TEST_ECHO_KEY", "--tokenizer", str(served["folder"]), "--w", "dates",
             "--limit", "1", "--max-retries", "0", "--cache-dir", str(tmp_path / "cache"),
             "--output", str(tmp_path / "run")],
            env=env, capture_output=True, timeout=300, cwd=tmp_path,
        )  # fmt: skip
    finally:
        served["faults"].echo_key = False


def _nowhere(done: subprocess.CompletedProcess, tmp_path, *held: str) -> None:
    places = {"stdout": done.stdout, "stderr": done.stderr}
    for path in tmp_path.rglob("*"):
        if path.is_file():
            places[str(path)] = path.read_bytes()
    for secret in held:
        for form in _forms(secret):
            for where, data in places.items():
                assert form not in data, f"{form!r} in {where}"


def test_a_200_reply_whose_error_quotes_the_key_ends_in_one_line_without_it(served, tmp_path):
    done = _run(served, tmp_path, served["url"], "200")
    assert done.returncode == 2, done.stderr
    err = done.stderr.decode()
    assert "does not fit the protocol" in err and "Traceback" not in err
    assert "bad key ***" in err  # the reply is still quoted, its secret masked
    _nowhere(done, tmp_path, KEY)


def test_a_400_echoing_the_requests_basic_credentials_shows_neither(served, tmp_path):
    scheme, rest = served["url"].split("://", 1)
    done = _run(served, tmp_path, f"{scheme}://{USER}:{PASSWORD}@{rest}", "request")
    assert done.returncode == 2, done.stderr
    err = done.stderr.decode()
    assert "HTTP 400" in err and "Traceback" not in err
    assert "auth=Basic ***" in err and "password ***" in err
    _nowhere(done, tmp_path, KEY, PASSWORD, f"{USER}:{PASSWORD}")


@pytest.mark.parametrize(
    "shown",
    [
        f"token {KEY}",
        f"Authorization: Bearer {KEY}",
        "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
        base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("="),
    ],
)
def test_every_form_of_a_held_secret_is_masked(shown):
    secrets.hold(KEY)
    secrets.hold_credentials(USER, PASSWORD)
    out = secrets.redact(shown)
    for secret in (KEY, PASSWORD, f"{USER}:{PASSWORD}"):
        for form in _forms(secret):
            assert form.decode() not in out
    assert "***" in out


def test_an_error_message_is_redacted_wherever_it_is_read():
    from biaslens.errors import BiaslensError

    secrets.hold(KEY)
    error = BiaslensError(f"the server said: invalid key {KEY}")
    assert KEY not in str(error) and "invalid key ***" in str(error)
    assert KEY not in f"{error}"
