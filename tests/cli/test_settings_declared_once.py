"""Each setting is declared once, as a field of a settings model: a command beside a method
takes its options from such a model (``options_of``), so its bound and default cannot drift
from the method's. This test fails when an ``Option("name", …)`` in ``src/`` declares a name
that is a settings field of a method."""

from __future__ import annotations

import re
from pathlib import Path

from biaslens.framework.registry import methods

SRC = Path(__file__).resolve().parents[2] / "src" / "biaslens"

STILL_DECLARED: dict[tuple[str, str], str] = {}
"""(file, name): an option that still declares a settings field of its own, with why (none)."""


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


def test_cid_defaults_have_one_source():
    """K = 50 and 20 new tokens: the methods' setting, the request and the public
    contrastive_generate read one declaration (a changed default moves all three)."""
    import inspect

    from biaslens.common.contrastive_defaults import MAX_NEW_TOKENS, TOP_K
    from biaslens.decoding.contrastive import contrastive_generate
    from biaslens.methods.cid.scoring.contrastive import DecodingSettings
    from biaslens.models.requests import ContrastiveGenerateRequest

    assert TOP_K == 50  # CID paper §2
    public = inspect.signature(contrastive_generate).parameters
    request = ContrastiveGenerateRequest("a", "b", 1.0)
    setting = DecodingSettings()
    assert public["top_k"].default == request.top_k == setting.top_k == TOP_K
    assert public["max_new_tokens"].default == request.max_new_tokens == MAX_NEW_TOKENS
    assert setting.max_new_tokens == MAX_NEW_TOKENS
