"""The README and then the manual read from top to bottom: their shell commands and Python blocks
run in the order a reader meets them, in one folder, so a later example meets the run folders an
earlier one left.

A tiny model stands in for the default one and ``--limit 2`` for the full sets (UnQover's
smallest draw for its); a command that
needs the network (a hub name), a file the reader brings (``PATH_TO_…``, ``predictions.json``),
a server, or hours of training is left out, with the reason (its options are still checked by
``test_readme.py``)."""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

import pytest

from biaslens.store.paths import safe_name
from tests.test_cli import run_cli
from tests.test_readme import manual_text, resolve

from .conftest import DATA

LEFT_OUT = {
    "app": "starts a server",
    "download": "downloads",
    "metrics": "reads files the reader brings",
    "lei-train": "fine-tunes models (tests/methods/test_lei_train.py runs it)",
    "push": "publishes to the hub (tests/hub/test_card_push.py runs it)",
}


def walkthrough() -> list[tuple[str, str]]:
    """("bash", command line) and ("python", code) in reading order (```bash / ```python)."""
    steps = []
    for language, body in re.findall(r"```(bash|python)\n(.*?)```", manual_text(), re.S):
        if language == "python":
            steps.append(("python", body))
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"^(?:bash scripts/install\.sh && )?(?:\.venv/bin/)?", "", line.strip())
            if line.startswith("biaslens "):
                steps.append(("bash", line))
    return steps


def _why_left_out(words: list[str]) -> str | None:
    for word in words[1:3]:
        if word in LEFT_OUT:
            return LEFT_OUT[word]
    for flag, value in zip(words, words[1:], strict=False):
        if flag in ("-m", "--model") and value != "default":
            return "names a model on the hub or on the reader's disk"
        if flag == "--backend" and value != "hf":
            return "needs vLLM or a served model (tests/models/test_vllm.py runs it)"
    if any("PATH_TO" in w or w.endswith(".json") or w.startswith("~") for w in words):
        return "reads a file the reader brings"
    return None


def _stand_ins(words: list[str], model: str, folder: str) -> list[str]:
    """The tiny model for the default one, --limit 2, and the folder names that follow."""
    words = [w.replace("smollm2-135m-instruct", folder) for w in words]
    if words[1] == "audit":  # the tiny model, on one method (tests/auditing runs them all)
        flag = next((f for f in ("--model", "-m") if f in words), None)
        words = words + ["--model", model] if flag is None else words
        words[words.index(flag or "--model") + 1] = model
        return words + ([] if "--methods" in words else ["--methods", "sib-mgc"])
    if words[1] != "run":
        return [p for w in words for p in _paths(w)]
    words = ["biaslens", *words[1:]]
    command, _ = resolve(words[1:3])
    known = {opt for param in command.params for opt in param.opts}
    flag = next((f for f in ("--model", "-m") if f in words), None)
    if flag:
        words[words.index(flag) + 1] = model
    elif "--model" in known:
        words += ["--model", model]
    # UnQover's --limit draws whole subjects × templates: its smallest set is 3 subjects × 2
    # templates of the religion lists' 50 attributes
    limit = "300" if words[2] == "unqover" else "2"
    if "--limit" in words:
        words[words.index("--limit") + 1] = limit
    elif "--limit" in known:
        words += ["--limit", limit]
    return words


def _paths(word: str) -> list[str]:
    """A glob's folders; a run folder the manual names, which the stand-in --limit sent to its
    hashed sibling (``runs/…-1a2b3c4d``: the plain folder is kept for the full set)."""
    if "*" in word:
        return sorted(glob.glob(word))
    if word.startswith("runs/") and not Path(word).exists():
        siblings = sorted(glob.glob(word.rstrip("/") + "-" + "[0-9a-f]" * 8))
        if len(siblings) == 1:
            return siblings
    return [word]


@pytest.mark.slow
def test_the_manual_runs_in_reading_order(tiny_models, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(DATA))
    model = str(tiny_models["llama"])
    ran, left_out = [], []
    for kind, step in walkthrough():
        if kind == "python":
            code = step.replace('"default"', repr(model))
            exec(compile(code, "manual python block", "exec"), {"__name__": "readme"})
            assert capsys.readouterr().out.strip(), step
            ran.append("python block")
            continue
        words = shlex.split(step, comments=True)
        reason = _why_left_out(words)
        if reason:
            left_out.append((step, reason))
            continue
        args = _stand_ins(words, model, safe_name(model))
        code, out, err = run_cli(monkeypatch, capsys, *args[1:])
        assert code == 0, f"manual: {step}\nran as: {args}\n{out}\n{err}"
        ran.append(step)
    assert sum(s.startswith("biaslens run") for s in ran) >= 3, ran
    assert any(s.startswith("biaslens report") for s in ran), ran
    assert any(s.startswith("biaslens compare") for s in ran), ran
    assert ran.count("python block") >= 2
    assert all(reason for _, reason in left_out)
