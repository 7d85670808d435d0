"""A name that would drive a terminal or a page is inert where biaslens shows it: a model
folder named ``x<script>alert(1)</script> |**B** \\x1b[31mRED`` audited by the real CLI in a
child process. Its terminal output carries no escape byte, card.md no tag, no raw escape byte
and no cell border of the name's own, card.html only escaped text."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from biaslens.common.inert import markdown_text
from tests.conftest import DATA

HOSTILE = "x<script>alert(1)</script> |**B** \x1b[31mRED"


def test_markdown_text_leaves_nothing_a_viewer_would_act_on():
    shown = markdown_text(HOSTILE + "\n# heading")
    assert "<" not in shown and ">" not in shown and "\x1b" not in shown and "\n" not in shown
    # every | and * of the name is escaped, so it cannot end a cell or start emphasis
    assert shown.count("|") == shown.count("\\|") == 1
    assert shown.count("*") == shown.count("\\*") == 4
    assert markdown_text("# title").startswith("\\#") and markdown_text("1. x") == "1\\. x"
    assert markdown_text("SmolLM2-135M-Instruct") == "SmolLM2-135M-Instruct"  # plain names stay


@pytest.mark.slow
def test_a_hostile_model_folder_name_is_inert_on_the_terminal_and_in_the_card(
    tiny_models, tmp_path
):
    folder = tmp_path / HOSTILE
    shutil.copytree(tiny_models["llama"], folder)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "biaslens", "audit", "--model", str(folder), "--methods",
         "sib-mgc", "--size", "quick", "--data-dir", str(DATA), "--cache-dir",
         str(tmp_path / "cache"), "--output", str(tmp_path / "audit")],
        env=env, capture_output=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    for stream in (done.stdout, done.stderr):
        assert b"\x1b" not in stream  # shown as the four characters \x1b
    assert b"\\x1b[31mRED" in done.stdout
    (card_md,) = (tmp_path / "audit").rglob("card.md")
    text = card_md.read_bytes()
    assert b"\x1b" not in text and b"<script>" not in text
    heading = text.decode().splitlines()[0]
    assert heading.startswith("# Bias card: ") and "&lt;script&gt;" in heading
    assert "\\|\\*\\*B\\*\\*" in heading
    for line in text.decode().splitlines():
        if line.startswith("| "):  # every table row keeps its own number of cells
            assert line.replace("\\|", "").count("|") in (5, 7, 8), line
    card_html = (card_md.parent / "card.html").read_bytes()
    assert b"<script>alert" not in card_html and b"\x1b" not in card_html
