"""What a user sees of a run's settings: the plan counts what the run then asks, a comparison
runs each model with the settings a run of that model alone has, and a bad value is said once,
in one line, however many layers it passes through."""

from __future__ import annotations

import json

import pytest

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig
from tests.test_cli import run_cli

ARGS = {"w": ("dates",), "limit": 1, "preset": "paper"}


def _summary(folder):
    return json.loads((folder / "summary.json").read_text())


def test_a_run_asks_what_its_plan_counted(tiny_models, tmp_path):
    from biaslens.runner import plan_method, run_method

    model = str(tiny_models["llama"])
    plan = plan_method("sib-mgc", model=model, backend=BackendConfig(device="cpu"), **ARGS)
    counted = dict(zip(plan.table["request_type"], plan.table["requests"], strict=True))
    run_method(
        "sib-mgc", model=model, backend=BackendConfig(device="cpu"), output=tmp_path / "run",
        report=False, **ARGS,
    )  # fmt: skip
    asked = _summary(tmp_path / "run")["requests"]
    assert sum(counted.values()) == asked["computed"] + asked.get("cached", 0) > 0


def test_a_comparison_runs_each_model_as_a_run_of_it_alone(tiny_models, tmp_path):
    from biaslens.runner import run_comparison, run_method

    models = [str(tiny_models["llama"]), str(tiny_models["gpt2"])]
    backend = BackendConfig(device="cpu")
    run_comparison("sib-mgc", models, backend=backend, output=tmp_path / "cmp", **ARGS)
    compared = {
        s["settings"]["model"]: s["settings"]
        for s in map(_summary, (p.parent for p in (tmp_path / "cmp").rglob("summary.json")))
        if "model" in s.get("settings", {})
    }
    assert set(compared) == set(models)
    for model in models:
        alone = tmp_path / f"alone-{len(model)}-{models.index(model)}"
        run_method("sib-mgc", model=model, backend=backend, output=alone, report=False, **ARGS)
        assert compared[model] == _summary(alone)["settings"]


def test_a_bad_batch_size_is_said_once_in_one_line(tiny_models, tmp_path, monkeypatch, capsys):
    code, out, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "--model", str(tiny_models["llama"]),
        "--limit", "1", "--w", "dates", "--batch-size", "four", "--device", "cpu",
        "--output", str(tmp_path / "run"),
    )  # fmt: skip
    said = [line for line in (out + err).splitlines() if "four" in line]
    assert code != 0 and len(said) == 1, out + err
    assert "batch" in said[0].lower() and "Traceback" not in out + err
    assert not (tmp_path / "run" / "summary.json").exists()


def test_settings_prepared_for_one_model_are_checked_again_for_another(tiny_models):
    from biaslens.framework.registry import get_method
    from biaslens.models.loader import load_model

    spec = get_method("sib-mgc")
    settings = spec.build_settings("paper", w_kinds=("dates",), limit=1)
    first = load_model(str(tiny_models["llama"]), BackendConfig(device="cpu"))
    other = load_model(str(tiny_models["bert-mlm"]), BackendConfig(device="cpu"))
    try:
        prepared = spec.for_model(settings, first, "paper")
        assert spec.for_model(prepared, first) == prepared  # final for that model
        # another model checks them anew: the causal model's prompt does not fit a masked LM
        with pytest.raises(BiaslensError, match="a masked LM fills the \\[MASK\\] slot"):
            spec.for_model(prepared, other)
    finally:
        first.close()
        other.close()


def test_prepared_settings_pickle_without_their_model(tiny_models):
    """Settings go to worker processes (Ray): the copy carries no model and equals the
    original."""
    import pickle

    from biaslens.framework.registry import get_method
    from biaslens.models.loader import load_model

    spec = get_method("sib-mgc")
    lm = load_model(str(tiny_models["llama"]), BackendConfig(device="cpu"))
    try:
        prepared = spec.for_model(spec.build_settings("paper", limit=1), lm, "paper")
        copy = pickle.loads(pickle.dumps(prepared))
        assert copy == prepared and copy._prepared_for is None
        assert prepared._prepared_for() is lm
    finally:
        lm.close()
