"""comparison.md sets the known models beside each number once, with each audited model's
paired difference from its own card."""

from __future__ import annotations

from types import SimpleNamespace

from biaslens.auditing.card import BiasCard, CardRow, QuestionAnswer, ReferenceRow
from biaslens.auditing.compare import write_comparison


def _card(model: str, value: float, difference: float) -> BiasCard:
    row = CardRow(metric="mu", table="t", symbol="μ", labels={"set": "ethical"}, value=value,
                  step="toy", method="sib-toy", where="set ethical", verdict="reported",
                  finding="μ", run="toy", report=None)  # fmt: skip
    known = ReferenceRow(model="Known (org/known)", metric="mu", labels={"set": "ethical"},
                         value=0.157, ci_low=0.085, ci_high=0.212, protocol="p", source="s",
                         same_protocol=True, difference=difference,
                         difference_ci_low=difference - 0.1, difference_ci_high=difference + 0.1,
                         paired_over="40 units")  # fmt: skip
    return BiasCard(model=model, size="quick", created="now", rows=[row], references=[known])


def test_the_known_models_stand_once_beside_each_number(tmp_path):
    audits = [SimpleNamespace(model=m, card=_card(m, v, v - 0.157), folder=tmp_path / m)
              for m, v in (("a", 0.05), ("b", 0.30))]  # fmt: skip
    text = write_comparison(tmp_path, audits).read_text()
    assert text.count("Known models on this number:") == 1
    [line] = [x for x in text.splitlines() if x.startswith("| Known (org/known)")]
    assert "0.1570" in line and "a: -0.1070" in line and "b: 0.1430" in line
    assert line.endswith("| yes |")


def _answer(value: float, low: float, high: float) -> QuestionAnswer:
    return QuestionAnswer(
        step="toy", method="sib-toy", key="ethical_mu", question="Is μ under ethical advice 0?",
        source="LEI §3", metric="mu", symbol="μ", labels={"set": "ethical"}, value=value,
        unit="probability", meaning="μ", target=0.0, target_words="no bias", answer="evidence",
        ci_low=low, ci_high=high, ci_level=0.99, run_ci_low=low, run_ci_high=high,
        run_ci_level=0.95, interval="t", n=40, n_unit="units", detectable=None, caveat=None,
        finding="μ", run="toy", report=None,
    )  # fmt: skip


def test_each_question_has_one_forest_plot_of_the_audited_and_the_known_models(
    tmp_path, monkeypatch
):
    import biaslens.plots.forest as forest

    drawn, real = [], forest.forest_figure

    def drawing(lines, *args):
        drawn.append(lines)
        return real(lines, *args)

    monkeypatch.setattr(
        forest, "forest_figure", lambda lines, *a: drawn.append(lines) or real(lines, *a)
    )
    audits = []
    for model, value, low, high in (("a", 0.05, 0.03, 0.08), ("b", 0.30, 0.28, 0.33)):
        card = _card(model, value, value - 0.157)
        card.questions = [_answer(value, low, high)]
        audits.append(SimpleNamespace(model=model, card=card, folder=tmp_path / model))
    text = write_comparison(tmp_path, audits).read_text()
    [image] = [line for line in text.splitlines() if line.startswith("![")]
    name = image.split("](")[1].rstrip(")")
    assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    [lines] = drawn  # one plot for the one question, the audited models first, then the known
    assert [(x.label, x.value, x.low, x.high, x.grey) for x in lines] == [
        ("a", 0.05, 0.03, 0.08, False),
        ("b", 0.30, 0.28, 0.33, False),
        ("Known (org/known)", 0.157, 0.085, 0.212, True),
    ]
