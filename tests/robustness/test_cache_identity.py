"""A cached answer is reused only for the very same model, config, tokenizer and settings."""

from __future__ import annotations

import json
import shutil

import pytest

from biaslens.errors import ConfigMismatchError
from biaslens.methods.sib.mgc.settings import make_settings
from biaslens.models import BackendConfig
from tests.helpers import run_mgc

CPU = BackendConfig(device="cpu", batch_size=16)


@pytest.fixture
def model_copy(tiny_models, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_models["gpt2"], folder)
    return folder


def _run(folder, output, backend=CPU):
    settings = make_settings(model=str(folder), limit=1, w_kinds=("dates",))
    return run_mgc(settings, output, backend)


def _edit_json(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _swap_first_merge(path):
    """A different tokenizer: its first two BPE merges swapped."""
    data = json.loads(path.read_text())
    merges = data["model"]["merges"]
    merges[0], merges[1] = merges[1], merges[0]
    path.write_text(json.dumps(data))


def test_unchanged_model_reuses_everything(model_copy, tmp_path):
    first = _run(model_copy, tmp_path / "run")
    again = _run(model_copy, tmp_path / "run")
    assert first.cache_stats == {"cached": 0, "computed": 30}
    assert again.cache_stats == {"cached": 30, "computed": 0}


@pytest.mark.parametrize(
    "edit",
    [
        lambda f: _edit_json(f / "config.json", layer_norm_epsilon=0.1),
        lambda f: _edit_json(f / "generation_config.json", eos_token_id=[0, 1]),
        lambda f: _edit_json(f / "tokenizer_config.json", model_max_length=64),
        lambda f: _swap_first_merge(f / "tokenizer.json"),
    ],
    ids=["config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json"],
)
def test_an_edited_model_file_is_recomputed(edit, model_copy, tmp_path):
    first = _run(model_copy, tmp_path / "run")
    edit(model_copy)
    again = _run(model_copy, tmp_path / "run")
    assert first.cache_stats["computed"] == 30
    assert again.cache_stats == {"cached": 0, "computed": 30}
    fingerprints = {
        first.summary["model"]["fingerprint_sha256"],
        again.summary["model"]["fingerprint_sha256"],
    }
    assert len(fingerprints) == 2


@pytest.mark.parametrize(
    "backend",
    [BackendConfig(device="cpu", dtype="bfloat16"), BackendConfig(device="cpu", add_bos=True)],
    ids=["dtype", "add_bos"],
)
def test_numerics_settings_are_part_of_the_identity(backend, model_copy, tmp_path, monkeypatch):
    # the CPU's bf16 capability is injected, so the "bf16 is slow" warning does not depend on
    # the machine the suite runs on
    monkeypatch.setattr("biaslens.models.backends.hf.loading.cpu_has_bf16_units", lambda: False)
    _run(model_copy, tmp_path / "run")
    with pytest.warns(UserWarning) if backend.options.dtype == "bfloat16" else _no_warning():
        again = _run(model_copy, tmp_path / "other", backend)
    assert again.cache_stats["computed"] == 30  # the shared cache holds none of its answers
    # and the first run's folder is not overwritten with the other numbers
    with pytest.raises(ConfigMismatchError, match="read with other settings"):
        with pytest.warns(UserWarning) if backend.options.dtype == "bfloat16" else _no_warning():
            _run(model_copy, tmp_path / "run", backend)


def test_summary_records_the_full_backend_settings(model_copy, tmp_path):
    result = _run(model_copy, tmp_path / "run", BackendConfig(device="cpu", batch_size=7))
    backend = result.summary["backend"]
    assert backend["backend"] == "hf" and backend["device"] == "cpu"
    assert backend["batch_size"] == 7 and backend["dtype"] == "auto"
    model = result.summary["model"]
    assert (
        model["dtype"] == "float32" and model["device_type"] == "cpu" and model["add_bos"] == "None"
    )
    assert len(model["fingerprint_sha256"]) == 64 and len(model["weights_sha256"]) == 64


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
