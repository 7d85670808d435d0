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


def _mgc(model, progress=None, **options):
    from biaslens.models import BackendConfig

    return run_method(
        "sib-mgc", model=model, w=("dates",), report=False, progress=progress,
        backend=BackendConfig(device="cpu"), **options,
    )  # fmt: skip


def test_the_plain_folder_is_kept_for_the_full_set_whatever_ran_before(
    tiny_models, tmp_path, monkeypatch
):
    """A first look (``--limit``) never takes the plain folder: it goes to a sibling named with
    a hash of its settings, said before the work starts; the full run finds the plain folder
    free, and each finds its own folder again (and resumes there)."""
    monkeypatch.chdir(tmp_path)
    model = str(tiny_models["llama"])
    notes = Notes()
    first = _mgc(model, notes, limit=1)
    plain = first.run_dir.parent / first.run_dir.name.rsplit("-", 1)[0]
    assert notes.lines == [
        f"run folder: {first.run_dir} (--limit 1: {plain} is kept for the full set)",
        "--limit 1: 1 sentence frames at every W value → 30 prompts",  # what it kept
    ]
    full = _mgc(model, notes)
    assert full.run_dir == plain and notes.lines[-1] == f"run folder: {plain}"
    assert _mgc(model, limit=1).run_dir == first.run_dir  # found again, not another folder
    assert _mgc(model, limit=2).run_dir not in (first.run_dir, plain)
    assert len(list(plain.parent.iterdir())) == 3


def test_another_n_gets_its_own_default_folder_and_the_same_settings_resume(tmp_path, monkeypatch):
    """A method without --limit: the plain folder holding a run of other settings sends the new
    run beside it, saying why at the start."""
    monkeypatch.chdir(tmp_path)
    first = _toy(500)
    notes = Notes()
    second = _toy(600, progress=notes)
    recorded = second.settings
    text = json.dumps([recorded, None, None], sort_keys=True)  # settings, commit, numerics
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert second.run_dir.name == f"{first.run_dir.name}-{digest[:8]}"
    assert notes.lines == [
        f"run folder: {second.run_dir} ({first.run_dir} holds another run (n: 500 -> 600))"
    ]
    assert _toy(600).run_dir == second.run_dir  # found again, not a third folder
    assert _toy(500).run_dir == first.run_dir


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
