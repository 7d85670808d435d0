"""The app in headless Chromium: one interaction per tool, hostile text shown as text."""

from __future__ import annotations

import dataclasses

import pytest

from biaslens.models.requests import ContrastiveGenerateResult
from tests.app.conftest import serve
from tests.conftest import screenshot

pytestmark = pytest.mark.browser
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def test_cid_playground(page, app_url):
    page.goto(app_url)
    page.get_by_text("model:").wait_for()
    page.fill("#cid-x", "the doctor said")
    page.fill("#cid-x-prime", "the nurse said")
    page.locator("#cid-lam").fill("12")  # moving the slider fires change: a new request
    page.wait_for_function("document.getElementById('cid-status').textContent.startsWith('done')")
    assert page.text_content("#cid-status") == "done: λ = 12"
    assert page.text_content("#cid-out-x").startswith("the doctor said")
    assert page.text_content("#cid-out-x-prime").startswith("the nurse said")
    screenshot(page, "app-cid")
    assert page.errors == []


def test_specification_detector(page, app_url):
    page.goto(app_url)
    page.click("button[data-tool=detect]")
    page.fill("#detect-sentence", "The engineer said that [MASK] was late.")
    page.click("#detect-run")
    page.wait_for_function("document.getElementById('detect-verdict').textContent.length > 0")
    verdict = page.text_content("#detect-verdict")
    assert verdict.startswith(("unspecified", "well-specified")) and "|p_f(2016)" in verdict
    assert page.locator("#detect-table tbody tr").count() == 24
    assert page.is_visible("#detect-plot")
    screenshot(page, "app-detector")
    page.fill("#detect-sentence", "no slot")
    page.click("#detect-run")
    page.wait_for_function(
        "document.getElementById('detect-status').textContent.startsWith('error')"
    )
    assert "exactly one [MASK]" in page.text_content("#detect-status")


def test_dose_response(page, app_url):
    page.goto(app_url)
    page.click("button[data-tool=dose]")
    page.fill("#dose-sentence", "In [PLACE], [MASK] became a doctor.")
    page.fill("#dose-values", "Iceland, Yemen, Chad")
    page.click("#dose-run")
    page.wait_for_function("document.querySelectorAll('#dose-table tbody tr').length === 3")
    cells = page.locator("#dose-table tbody tr td:first-child").all_text_contents()
    assert cells == ["Iceland", "Yemen", "Chad"]
    assert page.text_content("#dose-status") == "done: 3 values"
    screenshot(page, "app-dose-response")


class HostileModel:
    """A causal model whose every contrastive continuation is markup."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.identity = dataclasses.replace(inner.identity, name='<b onmouseover="x()">hostile</b>')
        self.kind = inner.kind

    def require(self, request_type: str) -> None:
        self.inner.require(request_type)

    def contrastive_generate(self, requests, progress=None):
        return [ContrastiveGenerateResult(HOSTILE, 3, "stop") for _ in requests]


def test_untrusted_text_is_never_markup(page, tiny_backends):
    with serve(HostileModel(tiny_backends["llama"])) as url:
        page.goto(url)
        page.get_by_text("model:").wait_for()
        assert '<b onmouseover="x()">hostile</b>' in page.text_content("#model-info")
        page.fill("#cid-x", '<img src=y onerror="window.__pwned = 3">')
        page.click("#cid-run")
        page.wait_for_function(
            "document.getElementById('cid-status').textContent.startsWith('done')"
        )
        assert page.text_content("#cid-out-x").endswith(HOSTILE)
        assert page.text_content("#cid-out-x").startswith("<img src=y")
        assert page.locator("#cid-out-x img, #cid-out-x script, #model-info b").count() == 0
        assert page.evaluate("window.__pwned") is None and page.dialogs == []
        screenshot(page, "app-escaping")
