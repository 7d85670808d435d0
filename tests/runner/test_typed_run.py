"""``biaslens.run`` with typed settings: the method's settings object (and a backend's typed
options) instead of keywords, the same run either way; one declaration of a run, not two."""

from __future__ import annotations

import inspect

import pytest

import biaslens
from biaslens.api import _backend_config
from biaslens.errors import BiaslensError
from biaslens.framework.registry import built_in_methods
from biaslens.methods import typed
from biaslens.models.config import BackendConfig
from biaslens.models.registry import backends, wrappers


def test_every_built_in_method_and_backend_has_its_typed_model_listed():
    listed = {getattr(typed, name) for name in typed.__all__}
    assert {spec.settings for spec in built_in_methods().values()} <= listed
    assert {b.options for b in (*backends().values(), *wrappers())} <= listed
    fields = inspect.signature(typed.MGCSettings).parameters
    assert {"w_kinds", "limit", "model", "ci_level"} <= set(fields)  # what an editor completes


def test_a_settings_object_runs_the_same_run_as_keywords(tmp_path):
    by_keywords = biaslens.run("sib-toy", n=500, seed=3, output=tmp_path / "a", report=False)
    by_object = biaslens.run(typed.ToySettings(n=500, seed=3), output=tmp_path / "b", report=False)
    assert by_object.method == "sib-toy"
    assert by_object.settings == by_keywords.settings
    assert by_object.metrics == by_keywords.metrics and by_object.metrics


def test_a_settings_object_with_keywords_or_a_preset_beside_it_is_refused(tmp_path):
    with pytest.raises(BiaslensError, match=r"ToySettings was given with settings \['n'\]"):
        biaslens.run(typed.ToySettings(), n=500, output=tmp_path / "x")
    with pytest.raises(BiaslensError, match="ToySettings was given with preset 'paper'"):
        biaslens.run(typed.ToySettings(), preset="paper", output=tmp_path / "x")

    class Stray(typed.ToySettings):
        pass

    with pytest.raises(BiaslensError, match="Stray is not the settings model of any method"):
        biaslens.run(Stray(), output=tmp_path / "x")


def test_typed_backend_options_choose_their_backend():
    config = _backend_config(typed.HFOptions(dtype="float32", device="cpu"), {})
    assert config == BackendConfig(backend="hf", dtype="float32", device="cpu")
    served = _backend_config(typed.OpenAIOptions(base_url="http://127.0.0.1:9/v1"), {})
    assert served.backend == "openai" and served.options.base_url == "http://127.0.0.1:9/v1"
