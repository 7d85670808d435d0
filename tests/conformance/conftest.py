"""Fixtures of the conformance suite."""

from __future__ import annotations

import pytest

from biaslens.data import sources
from biaslens.methods.sib.data import mgc, winogender
from tests.conformance.leaning import leaning_copy
from tests.conftest import DATA

STYLES = {"bert-mlm": "mlm", "roberta-mlm": "mlm", "bart": "reconstruct",
          "t5-denoiser": "sentinel", "t5": "generate"}  # fmt: skip
"""The tiny models whose top-5 rules would otherwise never see a pronoun, by slot style."""


@pytest.fixture(scope="session")
def leaning_models(tiny_models, tmp_path_factory) -> dict:
    """Copies of the tiny models that rank pronouns among the top 5 on some inputs, not all
    (``tests/conformance/leaning.py``); the other tiny models as they are."""
    root = tmp_path_factory.mktemp("leaning-models")
    table = mgc.build_mgc()
    detect = winogender.build_extended(sources.locate("winogender", DATA))
    dated = [mgc.inject_date(s, y) for s in detect["sentence"][:60] for y in (1901, 2016)]
    masked = [list(table["sentence"][::8]), dated]
    prompted = [[mgc.wrap_in_prompt(s, p) for s in g[::3] for p in mgc.PROMPTS] for g in masked]
    folders = dict(tiny_models)
    for name, style in STYLES.items():
        texts = prompted if style == "generate" else masked
        folders[name] = leaning_copy(tiny_models[name], root / name, style, texts)
    return folders
