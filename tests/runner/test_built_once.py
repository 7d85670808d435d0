"""A run builds its settings once (a comparison of N models, N times) and parses
``--batch-size`` once, however many layers the values pass through."""

from __future__ import annotations

import pytest

from biaslens.framework.spec import MethodSpec
from biaslens.models import BackendConfig
from tests.test_cli import run_cli


@pytest.fixture
def builds(monkeypatch) -> list[str]:
    """The methods whose settings were built from values, one entry a build."""
    built: list[str] = []
    build = MethodSpec.build_settings

    def counting(self, *args, **kwargs):
        built.append(self.name)
        return build(self, *args, **kwargs)

    monkeypatch.setattr(MethodSpec, "build_settings", counting)
    return built


def test_a_run_builds_its_settings_once(builds, tiny_models, tmp_path):
    from biaslens.runner import run_method

    run_method(
        "sib-mgc", model=str(tiny_models["llama"]), w=("dates",), limit=1, preset="paper",
        backend=BackendConfig(device="cpu"), output=tmp_path / "run", report=False,
    )  # fmt: skip
    assert builds == ["sib-mgc"]


def test_a_comparison_builds_each_models_settings_once(builds, tiny_models, tmp_path):
    from biaslens.runner import run_comparison

    models = [str(tiny_models["llama"]), str(tiny_models["gpt2"])]
    run_comparison(
        "sib-mgc", models, w=("dates",), limit=1, backend=BackendConfig(device="cpu"),
        output=tmp_path / "cmp",
    )  # fmt: skip
    assert builds == ["sib-mgc", "sib-mgc"]


def test_the_command_line_parses_the_batch_size_once(tiny_models, tmp_path, monkeypatch, capsys):
    from biaslens.models import options

    parsed = []
    parse = options.parse_batch_size

    def counting(value, name="batch size"):
        parsed.append(value)
        return parse(value, name)

    monkeypatch.setattr(options, "parse_batch_size", counting)
    code, out, err = run_cli(
        monkeypatch, capsys, "run", "sib-mgc", "--model", str(tiny_models["llama"]),
        "--limit", "1", "--w", "dates", "--batch-size", "4", "--device", "cpu",
        "--output", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 0, err
    assert parsed == ["4"]
