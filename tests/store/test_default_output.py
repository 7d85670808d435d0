"""A run without ``--output`` never collides with an earlier one: the default folder holding a
run of other settings sends the new run to a sibling named with a hash of its settings, and the
same settings again find their own folder (and resume there); an explicit folder keeps the
refusal, naming both ways to give another."""

from __future__ import annotations

import hashlib
import json

import pytest

from biaslens.errors import ConfigMismatchError
from biaslens.runner import run_method


def _toy(n: int, **options):
    return run_method("sib-toy", n=n, report=False, **options)


class Notes:
    """A progress that keeps the run's notes (the run folder, said before the work starts)."""

    def __init__(self):
        self.lines = []

    def task(self, description, total, unit="req"):
        return lambda n: None

    def note(self, message):
        self.lines.append(message)


def test_the_default_folder_belongs_to_the_default_settings_whatever_ran_before(
    tmp_path, monkeypatch
):
    """A first look (another sample size) never takes the plain folder: it goes to a sibling
    named with a hash of its settings, said at the start; the run of the default settings
    finds the plain folder free, and each finds its own folder again (and resumes there)."""
    monkeypatch.chdir(tmp_path)
    notes = Notes()
    first = _toy(500, progress=notes)
    plain = first.run_dir.parent / "sib-toy"
    text = json.dumps([first.settings, None, None], sort_keys=True)  # settings, commit, numerics
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert first.run_dir.name == f"{plain.name}-{digest[:8]}"
    assert notes.lines == [f"run folder: {first.run_dir} (settings other than the defaults: n)"]
    second = _toy(600)
    assert second.run_dir not in (first.run_dir, plain)
    full = run_method("sib-toy", report=False, progress=notes)
    assert full.run_dir == plain and notes.lines[-1] == f"run folder: {plain}"
    assert _toy(600).run_dir == second.run_dir  # found again, not another folder
    assert _toy(500).run_dir == first.run_dir
    assert len(list(plain.parent.iterdir())) == 3


def test_the_plain_folder_holding_another_run_sends_the_new_one_beside_it(tmp_path, monkeypatch):
    """A plain folder that holds a run of other settings (an older biaslens's first look, or an
    edited config) is left as it is: the default run goes beside it, saying why."""
    import yaml

    monkeypatch.chdir(tmp_path)
    first = _toy(500)
    plain = first.run_dir.parent / "sib-toy"
    plain.mkdir()
    config = yaml.safe_load((first.run_dir / "config.yaml").read_text())
    (plain / "config.yaml").write_text(yaml.safe_dump(config))
    (plain / "summary.json").write_text("{}")
    notes = Notes()
    full = run_method("sib-toy", report=False, progress=notes)
    assert full.run_dir.parent == plain.parent and full.run_dir != plain
    assert "holds another run (n: 500 -> 100000)" in notes.lines[0]
    assert (plain / "summary.json").read_text() == "{}"


def test_an_explicit_output_of_other_settings_is_still_refused(tmp_path):
    _toy(500, output=tmp_path / "run")
    with pytest.raises(ConfigMismatchError, match=r"n: 500 -> 600.*--output, or output="):
        _toy(600, output=tmp_path / "run")


def test_the_same_model_read_another_way_never_overwrites_a_finished_run(
    tiny_models, tmp_path, monkeypatch
):
    """Another dtype (or --chat, another device class) gives other numbers from the same
    files: the default folder's finished run stays as it was, the new run goes beside it, and
    an explicit folder is refused with what changed."""
    from biaslens.models import BackendConfig

    monkeypatch.chdir(tmp_path)
    model = str(tiny_models["llama"])

    def mgc(dtype, **options):
        backend = BackendConfig(device="cpu", dtype=dtype)
        return run_method(
            "sib-mgc", model=model, w=("dates",), limit=1, backend=backend, report=False,
            **options,
        )  # fmt: skip

    first = mgc("float32")
    summary = (first.run_dir / "summary.json").read_bytes()
    second = mgc("bfloat16")
    assert second.run_dir != first.run_dir and second.run_dir.parent == first.run_dir.parent
    assert (first.run_dir / "summary.json").read_bytes() == summary
    assert mgc("bfloat16").run_dir == second.run_dir  # found again
    with pytest.raises(ConfigMismatchError, match=r"read with other settings \(dtype"):
        mgc("bfloat16", output=first.run_dir)
    assert (first.run_dir / "summary.json").read_bytes() == summary
