"""Inputs that were accepted and made a wrong result, now refused in one line naming the input:
a word list with a subject twice (a Christian-vs-Christian pair, every request doubled), a
control character in a word list, two subject lists sharing a subject, and a checkpoint whose
weights hold NaN (every probability NaN, masses stored as 0)."""

from __future__ import annotations

import shutil

import pytest
import torch

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.unqover import load_question_set, parse_subjects
from biaslens.models import BackendConfig, load_model
from tests.conftest import DATA

SUBJECTS = DATA / "unqover" / "word_lists" / "nouns" / "subjects"


def word_lists_with(tmp_path, name: str, text: str):
    """A copy of the UnQover word lists with subject list ``name`` replaced by ``text``."""
    root = tmp_path / "word_lists"
    shutil.copytree(DATA / "unqover" / "word_lists", root)
    (root / "nouns" / "subjects" / name).write_text(text, encoding="utf-8")
    return root


def test_a_subject_listed_twice_is_refused_naming_both_lines(tmp_path):
    original = (SUBJECTS / "religion").read_text(encoding="utf-8")
    first = next(line for line in original.splitlines() if line.startswith("[subj]"))
    head, _, term = first.partition(" ")
    root = word_lists_with(tmp_path, "religion", f"{original}\n{head} {term.upper()}\n")
    last_line = len((original + "\n").splitlines()) + 1
    with pytest.raises(BiaslensError) as error:
        load_question_set("religion", root)
    message = str(error.value)
    assert f"religion:{last_line}: the subject" in message and "listed twice" in message
    assert "first on line" in message and "\n" not in message


@pytest.mark.parametrize("character", ["\x00", "\x1b", "\x07"])
def test_a_control_character_in_a_word_list_is_refused_with_its_line(tmp_path, character):
    path = tmp_path / "subjects"
    path.write_text(f"[subj] Christian\n[subj] Mus{character}lim\n", encoding="utf-8")
    with pytest.raises(BiaslensError) as error:
        parse_subjects(path)
    assert f"subjects:2: a control character ({character!r})" in str(error.value)


def test_a_tab_separated_row_is_still_a_word_list(tmp_path):
    path = tmp_path / "subjects"
    path.write_text("[subj] Christian\n[subj] Muslim\t\n", encoding="utf-8")
    assert [s.term for s in parse_subjects(path)] == ["Christian", "Muslim"]


def test_two_subject_lists_that_share_a_subject_are_refused(tmp_path):
    root = word_lists_with(tmp_path, "male", (SUBJECTS / "female").read_text(encoding="utf-8"))
    with pytest.raises(BiaslensError, match="the two subject lists share"):
        load_question_set("gender", root)


def test_the_shipped_lists_have_no_duplicates():
    questions = load_question_set("religion", DATA / "unqover" / "word_lists")
    assert all(a.term.casefold() != b.term.casefold() for a, b in questions.pairs)


@pytest.fixture
def nan_model(tiny_models, tmp_path):
    from transformers import AutoModelForCausalLM

    folder = tmp_path / "nan-llama"
    shutil.copytree(tiny_models["llama"], folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        next(model.parameters())[0, 0] = float("nan")
    model.save_pretrained(folder)
    return folder


def test_a_checkpoint_with_nan_weights_is_refused_before_any_work(nan_model):
    with pytest.raises(BiaslensError, match="hold NaN or infinite values") as error:
        load_model(str(nan_model), BackendConfig(device="cpu"))
    assert str(nan_model) in str(error.value) and "embed_tokens" in str(error.value)


def test_a_run_on_a_nan_checkpoint_is_one_line_and_leaves_no_folder(
    nan_model, tmp_path, monkeypatch, capsys
):
    from tests.test_cli import run_cli

    out = tmp_path / "run"
    code, _, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "-m", str(nan_model), "--limit", "1", "-o", str(out)
    )
    assert code != 0 and "NaN" in err and "Traceback" not in err
    assert not out.exists()
