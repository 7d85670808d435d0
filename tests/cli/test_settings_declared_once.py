"""Each setting is declared once, as a field of a settings model: a command beside a method
takes its options from such a model (``options_of``), so its bound and default cannot drift
from the method's. This test fails when an ``Option("name", …)`` in ``src/`` declares a name
that is a settings field of a method."""

from __future__ import annotations

import re
from pathlib import Path

from biaslens.framework.registry import methods

SRC = Path(__file__).resolve().parents[2] / "src" / "biaslens"

STILL_DECLARED = {
    # (file, name): why it is still an Option of its own (each a setting to move)
    ("methods/sib/detect/stored.py", "threshold"): "read the SIB authors' released outputs",
    ("methods/sib/detect/stored.py", "earliest"): "default: the first date stored, not 1800",
    ("methods/sib/detect/stored.py", "latest"): "default: the last date stored, not 2016",
    ("methods/qa/lei_eval/method.py", "domain"): "lm-eval export: one domain per task",
    ("methods/cid/ratings.py", "seed"): "hidden, deprecated: older command lines run",
    ("cli/reports.py", "model"): "the app's model, not a run's",
    ("cli/catalog.py", "limit"): "lm-eval export: inputs per W value",
}


def test_no_option_redeclares_a_settings_field():
    fields = {name for spec in methods().values() for name in spec.settings.model_fields}
    declared = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r'\bOption\(\s*"([a-z_]+)"', text):
            if match.group(1) in fields:
                declared.add((path.relative_to(SRC).as_posix(), match.group(1)))
    new = declared - set(STILL_DECLARED)
    assert not new, f"declare these as settings fields and use options_of: {sorted(new)}"
    assert declared == set(STILL_DECLARED), "moved: take it off STILL_DECLARED"
