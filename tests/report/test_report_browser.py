"""The report opened in headless Chromium: content, a link to a sample row, no script runs."""

from __future__ import annotations

import pytest

from biaslens.report.html import write_report
from tests.conftest import screenshot
from tests.report.test_html import cid_run

pytestmark = [pytest.mark.browser, pytest.mark.odd_run_folder]


def test_report_in_a_real_browser(page, tmp_path):
    first = cid_run(tmp_path / "a")
    second = cid_run(tmp_path / "b", ("left early", "ok", "ok"))
    path = write_report([first, second], tmp_path / "report.html")
    page.goto(path.as_uri())
    assert page.title().startswith("biaslens report")
    assert page.locator("h2", has_text="Comparison").is_visible()
    # hostile model output is shown as text, and nothing ran
    assert page.get_by_text("<script>window.__pwned = 1</script>").first.is_visible()
    assert page.evaluate("window.__pwned") is None
    assert page.dialogs == [] and page.errors == []
    # a headline cell links to its per-sample row
    page.locator("#r0 table >> nth=1").locator("a").first.click()
    assert page.evaluate("location.hash").startswith("#r0-sample-")
    target = page.locator(":target")
    assert target.count() == 1 and target.is_visible()
    shot = screenshot(page, "report")
    assert shot.stat().st_size > 10_000


def test_the_first_screen_is_the_finding_and_nothing_overflows(page, tiny_models, tmp_path):
    """A run's report in a 1280×800 window: the headline values with their intervals are on
    the first screen, provenance and settings are folded, and the wide per-sample table (top
    tokens, inputs) scrolls inside its box instead of widening the page."""
    import biaslens

    result = biaslens.run(
        "sib-mgc", str(tiny_models["llama"]), output=tmp_path / "run", w_kinds=("dates",),
        limit=1, device="cpu", min_pronoun_mass=0,
    )  # fmt: skip
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(result.report.as_uri())
    reading = page.locator("section.reading table").first
    box = reading.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 800, box
    assert (
        not page.get_by_text("Provenance: model, data and checksums")
        .locator("xpath=..")
        .get_attribute("open")
    )
    assert not page.locator("details[open]").count()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, width
    screenshot(page, "report-first-screen")
