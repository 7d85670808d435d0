"""The API key and secrets in the server's URL reach no message, file or log: a server that
echoes the key, a key with a line break or a non-ASCII character, ``?api_key=`` in --base-url."""

from __future__ import annotations

import pytest

from biaslens.common.urls import redact_url, split_query
from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.models.backends.openai.http_client import api_key
from biaslens.models.backends.openai.replies import ServerError
from tests.conftest import SERVED_NAME as NAME

KEY = "sk-TestKeyThatMustNeverBeShown0123"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://h:8000/v1?api_key=S3CRET", "http://h:8000/v1?api_key=***"),
        ("http://u:S3CRET@h/v1", "http://***@h/v1"),
        ("http://h/v1?a=1&key=S3CRET#S3CRET", "http://h/v1?a=***&key=***#***"),
        ("http://h/v1", "http://h/v1"),
    ],
)
def test_urls_are_shown_without_user_password_query_or_fragment(url, shown):
    assert redact_url(url) == shown


def test_a_query_is_sent_as_parameters_and_paths_go_before_it():
    assert split_query("http://h/v1/?api_key=S&x=") == (
        "http://h/v1", [("api_key", "S"), ("x", "")],
    )  # fmt: skip


def test_a_key_read_with_its_newline_is_stripped(monkeypatch):
    monkeypatch.setenv("BIASLENS_TEST_KEY", KEY + "\n")
    assert api_key("BIASLENS_TEST_KEY") == KEY


@pytest.mark.parametrize("key", [KEY[:10] + "\r\n" + KEY[10:], KEY + "é", "sk-a b"])
def test_a_key_a_header_cannot_carry_is_one_line_without_the_key(monkeypatch, key):
    monkeypatch.setenv("BIASLENS_TEST_KEY", key)
    with pytest.raises(BiaslensError) as error:
        api_key("BIASLENS_TEST_KEY")
    assert "cannot carry" in str(error.value) and key not in str(error.value)
    assert KEY[:10] not in str(error.value)


def test_a_server_that_echoes_the_key_does_not_get_it_into_the_error(served, monkeypatch):
    monkeypatch.setenv("BIASLENS_TEST_KEY", KEY)
    lm = load_model(NAME, BackendConfig(backend="openai", base_url=served["url"],
                                        api_key_env="BIASLENS_TEST_KEY", max_retries=0,
                                        tokenizer=str(served["folder"])))  # fmt: skip
    served["faults"].echo_key = True
    try:
        from biaslens.models import GenerateRequest

        with pytest.raises(ServerError) as error:
            lm.generate([GenerateRequest("Who is the nurse?", max_new_tokens=2, top_k=2)])
        assert "HTTP 400" in str(error.value) and "Bearer ***" in str(error.value)
        assert KEY not in str(error.value)
    finally:
        served["faults"].echo_key = False
        lm.close()


def test_a_key_in_the_url_query_reaches_no_file_and_no_warning(served, tmp_path, recwarn):
    import biaslens

    secret = "QuerySecret0123456789"
    result = biaslens.run(
        "sib-mgc", model=NAME, backend="openai", base_url=f"{served['url']}?api_key={secret}",
        tokenizer=str(served["folder"]), api_key_env="BIASLENS_UNSET_KEY", w_kinds=("dates",),
        limit=1, output=tmp_path / "run",
    )  # fmt: skip
    assert result.summary["backend"]["base_url"].endswith("/v1?api_key=***")
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert all(secret not in str(w.message) for w in recwarn)
