"""comparison.md sets the known models beside each number once, with each audited model's
paired difference from its own card."""

from __future__ import annotations

from types import SimpleNamespace

from biaslens.auditing.card import BiasCard, CardRow, ReferenceRow
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
