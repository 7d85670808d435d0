"""The audit's inputs, as a careful user gives them: a models file with repeats, blank lines
and comments, names that would share a folder, a folder another audit is writing, and Ctrl-C
between two methods (the rerun goes on from the finished ones)."""

from __future__ import annotations

import pytest

from biaslens.api import audit
from biaslens.errors import BiaslensError
from biaslens.store.lock import RunLock
from tests.conftest import DATA
from tests.test_cli import run_cli


class Notes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def task(self, description, total, unit="req"):
        return lambda n: None

    def note(self, message: str) -> None:
        self.lines.append(message)


def test_a_models_file_with_repeats_blank_lines_and_comments(monkeypatch, capsys, tiny_models,
                                                             tmp_path):  # fmt: skip
    model = str(tiny_models["llama"])
    listed = tmp_path / "models.txt"
    listed.write_text(f"# my models\n\n{model}\n   \n{model}  # again\n{model}\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        monkeypatch, capsys, "audit", "--models-file", str(listed), "--methods", "sib-mgc",
        "--data-dir", str(DATA), "--dry-run",
    )  # fmt: skip
    assert code == 0, err
    text = " ".join((out + err).split())
    assert f"{model} is listed 3 times: audited once" in text
    assert out.count("audit plan") == 1


def test_names_that_would_share_a_folder_are_refused(tmp_path):
    with pytest.raises(BiaslensError, match="would share the audit folder org--model"):
        audit(["org/model", "org--model"], output=tmp_path / "a", dry_run=True, progress=Notes())


def test_a_folder_another_audit_is_writing_is_one_line(tiny_models, tmp_path):
    folder = tmp_path / "audit"
    model = str(tiny_models["llama"])
    other = RunLock(folder)  # another process's audit of this folder, under way
    folder.mkdir()
    other.acquire()
    try:
        with pytest.raises(BiaslensError, match="in use by another biaslens process"):
            audit(model, methods=["sib-mgc"], output=folder, data_dir=DATA)
    finally:
        other.release()


@pytest.mark.slow
def test_ctrl_c_between_methods_and_the_rerun_goes_on(tiny_models, tmp_path, monkeypatch):
    """Ctrl-C as the second method starts: the first method's run is finished and kept, no card
    is written for a half audit, and the rerun reuses the first run and finishes the rest."""
    import biaslens.auditing.run as runner  # where the audit looks run_method up

    model, folder = str(tiny_models["llama"]), tmp_path / "audit"
    methods = ["sib-mgc", "sib-detect"]
    real, calls = runner.run_method, []

    def interrupted(method, *args, **kwargs):
        calls.append(method)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(method, *args, **kwargs)

    monkeypatch.setattr(runner, "run_method", interrupted)
    with pytest.raises(KeyboardInterrupt):
        audit(model, methods=methods, output=folder, data_dir=DATA, cache_dir=tmp_path / "c")
    model_folder = next(p for p in folder.iterdir() if p.is_dir())
    finished = [p.name for p in model_folder.iterdir() if (p / "summary.json").is_file()]
    assert finished == [calls[0]]
    assert not (model_folder / "card.json").exists()
    assert not (folder / ".lock").exists()  # the interrupted audit let go of its folder
    monkeypatch.setattr(runner, "run_method", real)
    again = audit(model, methods=methods, output=folder, data_dir=DATA, cache_dir=tmp_path / "c")
    card = again.models[0].card
    assert {row.step for row in card.rows} >= {"sib-mgc", "sib-detect"} and not card.failed
