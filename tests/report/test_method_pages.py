"""The documentation's method pages are written from the code and are current."""

from __future__ import annotations

from pathlib import Path

from biaslens.framework.registry import methods
from biaslens.report.method_pages import departures, write_pages

ROOT = Path(__file__).resolve().parents[2]


def test_the_method_pages_are_current(tmp_path):
    written = write_pages(tmp_path, ROOT / "docs" / "fidelity.md")
    assert {p.name for p in written} == {f"{name}.md" for name in methods()}
    for path in written:
        committed = ROOT / "docs" / "methods" / path.name
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: run bash scripts/docs.sh"
        )


def test_the_method_nav_is_current_and_lists_every_method():
    from biaslens.report.method_pages import with_method_nav

    committed = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert with_method_nav(committed) == committed, "mkdocs.yml is stale: run bash scripts/docs.sh"
    shuffled = committed.replace("      - methods/sib-toy.md\n", "")
    assert "methods/sib-toy.md" in with_method_nav(shuffled)


def test_a_page_holds_the_definition_metrics_preset_and_departures(tmp_path):
    [page] = [
        p for p in write_pages(tmp_path, ROOT / "docs" / "fidelity.md") if p.name == "lei-train.md"
    ]
    text = page.read_text()
    assert "## Headline metrics" in text and "`dominant_from`" in text
    assert "`--preset paper` sets:" in text and "- `dominant_from`: `adversarial`" in text
    assert "adding_cbias.py" in text  # the departures row for x_dom


def test_departures_are_the_rows_that_name_the_method():
    fidelity = """# Faithful by request, better by default

| method | setting |
|---|---|
| sib-mgc, sib-detect | pronoun scoring |
| unqover | examples |

| other | table |
|---|---|
| sib-detect | not a departure |"""
    assert departures(fidelity, "sib-detect") == [
        "| method | setting |",
        "|---|---|",
        "| sib-mgc, sib-detect | pronoun scoring |",
    ]
    assert departures(fidelity, "cid-audit") == ["biaslens follows the paper here: no departures."]


def test_every_public_name_is_documented():
    """The API reference is read from docstrings: each public name has one."""
    import biaslens

    missing = [
        n for n in biaslens.__all__ if n != "__version__" and not getattr(biaslens, n).__doc__
    ]
    assert missing == []
