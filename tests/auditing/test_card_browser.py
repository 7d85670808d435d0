"""The bias card opened in headless Chromium at 1280×800: its first screen is the questions with
their answers and intervals, the page is no wider than the window, and hostile text stays
text."""

from __future__ import annotations

import pytest

from biaslens.auditing.answers import answer_questions
from biaslens.auditing.card import BiasCard, LeftOut, ReferenceRow, ordered, rows_of
from biaslens.auditing.render import write_card
from tests.auditing.test_card import _primaries, estimate
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def _card() -> BiasCard:
    estimates = [
        estimate(labels={"prompt": "A", "w_kind": w, "gender": g}, metric="slope",
                 symbol="slope", value=v, ci_low=v - 0.01, ci_high=v + 0.01)
        for w in ("dates", "places") for g, v in (("female", 0.02), ("male", 0.004),
                                                  ("neutral", -0.001))
    ]  # fmt: skip
    estimates.append(estimate(caution="sparse: <script>alert(1)</script>"))
    rows = rows_of("sib-mgc", "sib-mgc", {"estimates": estimates}, "sib-mgc", "sib-mgc/r.html")
    primaries = _primaries({"dates": 0.03, "places": 0.005})
    primaries += _primaries({"names": 0.5}, caution="sparse: <script>alert(1)</script>")
    questions, family = answer_questions(primaries)
    return BiasCard(
        questions=questions,
        family=family,
        model="tiny <b>model</b>",
        size="quick",
        created="2026-01-01T00:00:00+00:00",
        rows=ordered(rows),
        left_out=[LeftOut(method="lei-train", why="fine-tunes the model")],
        references=[  # a long source without spaces, as the released files' names are
            ReferenceRow(
                model=f"ref-{i}",
                metric="slope",
                labels=rows[0].labels,
                value=0.01 * i,
                ci_low=0.0,
                ci_high=0.05,
                protocol="paper",
                source="org/repo@"
                + "0" * 40
                + ":data/"
                + "+".join(f"fp_file_{j}.csv" for j in range(6)),
                same_protocol=False,
                why_not_same="exact scoring",
            )
            for i in range(3)
        ],  # fmt: skip
        notes=["a note " * 40],
    )


def test_the_first_screen_is_the_verdicts_with_their_intervals(page, tmp_path):
    card = _card()
    write_card(card, tmp_path)
    plotted = [r.plot for r in card.rows if r.plot]  # the rows with known models beside them
    assert len(plotted) == 1 and (tmp_path / plotted[0]).stat().st_size > 5_000
    assert plotted[0] in (tmp_path / "card.html").read_text()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto((tmp_path / "card.html").as_uri())
    verdicts = page.locator("#verdicts li")
    assert verdicts.count() == 3  # the three questions, the cautioned one without a verdict
    for i in range(verdicts.count()):
        box = verdicts.nth(i).bounding_box()
        assert box is not None and box["y"] + box["height"] <= 800, (i, box)
    assert "% CI [" in verdicts.nth(0).inner_text() and "% CI [" in verdicts.nth(1).inner_text()
    assert verdicts.first.inner_text().startswith("evidence")
    assert "would detect" in verdicts.nth(1).inner_text()
    assert "no verdict" in verdicts.nth(2).inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.get_by_text("tiny <b>model</b>").first.is_visible()
    assert page.dialogs == [] and page.errors == []
    screenshot(page, "bias-card-first-screen")
