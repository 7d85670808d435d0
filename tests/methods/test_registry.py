"""The method registry and the runner: presets per model kind, the identity of a passed-in
model, and settings that must not share a name with a backend option."""

from __future__ import annotations

import pytest
from pydantic import Field

from biaslens.errors import BiaslensError
from biaslens.framework.registry import (
    MethodOutput,
    MethodSpec,
    get_method,
    methods,
    register,
)
from biaslens.framework.settings import MethodSettings
from biaslens.models import BackendConfig, load_model
from biaslens.models.base import ModelKind

CPU = BackendConfig(device="cpu", batch_size=8)


@pytest.mark.parametrize(
    ("name", "prompts"),
    [("bert-mlm", ("mask",)), ("bart", ("mask",)), ("llama", ("A", "B", "C")), ("t5", None)],
)
def test_sib_mgc_paper_preset_applies_per_model_kind(name, prompts, tiny_models, tmp_path):
    """Prompts A, B and C are for causal and seq2seq models; a masked LM (BERT, BART: the SIB
    paper's main subjects) fills its slot under --preset paper too."""
    import biaslens

    if prompts is None:
        prompts = ("A", "B", "C")
    result = biaslens.run(
        "sib-mgc", str(tiny_models[name]), output=tmp_path / "run", preset="paper",
        w_kinds=("dates",), limit=1, report=False, **CPU.describe(),
    )  # fmt: skip
    assert tuple(result.settings["prompts"]) == prompts
    assert result.settings["mode"] == "paper" and result.settings["generation_tokens"] == 10
    assert sorted(result["fits"]["prompt"].unique()) == sorted(prompts)


def test_a_users_prompts_win_over_the_preset(tiny_models, tmp_path):
    import biaslens

    result = biaslens.run(
        "sib-mgc", str(tiny_models["llama"]), output=tmp_path / "run", preset="paper",
        prompts=("B",), w_kinds=("dates",), limit=1, report=False, **CPU.describe(),
    )  # fmt: skip
    assert tuple(result.settings["prompts"]) == ("B",)


def test_unqover_paper_preset_scores_he_she_for_gender_masked_lms_only():
    spec = get_method("unqover")
    gender = spec.build_settings("paper", kind=ModelKind.MASKED, domain="gender")
    religion = spec.build_settings("paper", kind=ModelKind.MASKED, domain="religion")
    extractive = spec.build_settings("paper", kind=ModelKind.EXTRACTIVE_QA, domain="gender")
    asked = spec.build_settings("paper", kind=ModelKind.MASKED, domain="gender", pronouns=False)
    assert gender.pronouns and not religion.pronouns and not extractive.pronouns
    assert not asked.pronouns


def test_a_passed_model_is_recorded_as_itself(tiny_models, tmp_path):
    import biaslens

    lm = load_model(str(tiny_models["llama"]), BackendConfig(device="cpu", batch_size=5))
    result = biaslens.run("sib-mgc", lm=lm, output=tmp_path / "run", w_kinds=("dates",),
                          limit=1, report=False)  # fmt: skip
    assert result.settings["model"] == str(tiny_models["llama"])
    assert result.summary["backend"]["batch_size"] == 5
    assert result.summary["model"]["name"] == str(tiny_models["llama"])
    from biaslens.store.run import read_config

    config = read_config(result.run_dir)
    assert config["settings"]["model"] == str(tiny_models["llama"])
    assert config["runtime"]["batch_size"] == 5


def test_a_passed_model_names_its_default_output(tiny_models, tmp_path, monkeypatch):
    import biaslens

    monkeypatch.chdir(tmp_path)
    lm = load_model(str(tiny_models["llama"]), CPU)
    result = biaslens.run("sib-mgc", lm=lm, w_kinds=("dates",), limit=1, report=False)
    assert "default" not in str(result.run_dir)
    assert result.run_dir.name.startswith(str(tiny_models["llama"]).strip("/").replace("/", "--"))


def test_a_model_name_beside_a_passed_model_is_refused(tiny_models, tmp_path):
    import biaslens

    lm = load_model(str(tiny_models["llama"]), CPU)
    with pytest.raises(BiaslensError, match="named beside a loaded model"):
        biaslens.run("sib-mgc", "default", lm=lm, output=tmp_path / "run")
    # naming the loaded model itself is fine
    same = biaslens.run(
        "sib-mgc", str(tiny_models["llama"]), lm=lm, output=tmp_path / "same",
        w_kinds=("dates",), limit=1, report=False,
    )  # fmt: skip
    assert same.settings["model"] == str(tiny_models["llama"])
    with pytest.raises(BiaslensError, match="backend options were given beside a loaded model"):
        biaslens.run("sib-mgc", lm=lm, output=tmp_path / "run", batch_size=64)


def test_lei_train_batch_size_is_its_own_setting():
    """``train_batch_size`` is the training batch; ``batch_size`` stays the backend's."""
    settings = get_method("lei-train").build_settings(train_batch_size=16)
    assert settings.train_batch_size == 16
    assert "batch_size" not in type(settings).model_fields


def test_no_registered_method_shares_a_setting_name_with_a_backend_option():
    backend = BackendConfig.keywords()
    assert {"batch_size", "device", "base_url", "data_parallel"} <= backend
    for name, spec in methods().items():
        assert not set(spec.settings.model_fields) & backend, name


def test_registering_a_colliding_setting_fails():
    class Colliding(MethodSettings):
        model: str = "default"
        batch_size: int = Field(default=8)

    spec = MethodSpec(
        name="colliding-test-method",
        title="x",
        settings=Colliding,
        body=lambda ctx, s: MethodOutput(metrics={}),
    )
    with pytest.raises(ValueError, match=r"\['batch_size'\] share their name with backend"):
        register(spec)
    assert "colliding-test-method" not in methods()


def test_methods_come_in_a_fixed_order_whatever_the_import_order(monkeypatch):
    """The results reference, --help and `methods list` list the built-in methods in name
    order, then the others, also when the modules were imported (registered) in another
    order."""
    from biaslens.framework import registry

    expected = list(registry.methods())
    reversed_registry = dict(reversed(list(registry.METHODS.items())))
    monkeypatch.setattr(registry.METHODS, "_entries", reversed_registry)
    assert list(registry.methods()) == expected
    modules = [spec.body.__module__ for spec in registry.methods().values()]
    ours = [n for n, m in zip(expected, modules, strict=True) if m.startswith("biaslens.methods.")]
    assert ours == expected[: len(ours)] == sorted(ours)
    assert {"sib-mgc", "sib-detect", "sib-toy", "unqover", "lei-eval", "lei-train"} <= set(ours)
    assert {"cid-audit", "cid-sensitivity"} <= set(ours)
