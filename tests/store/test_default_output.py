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


def test_another_limit_gets_its_own_default_folder_and_the_same_settings_resume(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    first = _toy(500)
    with pytest.warns(UserWarning, match=r"holds a run of other settings \(n: 500 -> 600\); this"):
        second = _toy(600)
    assert first.run_dir != second.run_dir and first.run_dir.is_dir()
    recorded = second.settings
    digest = hashlib.sha256(json.dumps([recorded, None], sort_keys=True).encode()).hexdigest()
    assert second.run_dir.name == f"{first.run_dir.name}-{digest[:8]}"
    assert _toy(600).run_dir == second.run_dir  # found again, not a third folder
    assert _toy(500).run_dir == first.run_dir
    assert sorted(p.name for p in first.run_dir.parent.iterdir()) == sorted(
        [first.run_dir.name, second.run_dir.name]
    )


def test_an_explicit_output_of_other_settings_is_still_refused(tmp_path):
    _toy(500, output=tmp_path / "run")
    with pytest.raises(ConfigMismatchError, match=r"n: 500 -> 600.*--output, or output="):
        _toy(600, output=tmp_path / "run")
