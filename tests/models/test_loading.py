"""Device and dtype decisions follow the detected CPU capability (injected here, so the suite
gives the same answers on an AVX2-only CPU and on one with AVX-512 BF16 / AMX)."""

from __future__ import annotations

import warnings

import pytest
import torch

from biaslens.models.backends.hf import loading
from tests.conftest import DATA

AVX2_ONLY = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
AVX512_BF16 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 avx512f avx512_bf16\n"
AMX = "processor\t: 0\nflags\t\t: fpu avx2 amx_tile amx_bf16 amx_int8\n"


@pytest.mark.parametrize(
    ("cpuinfo", "expected"), [(AVX2_ONLY, False), (AVX512_BF16, True), (AMX, True), ("", True)]
)
def test_bf16_units_are_read_from_the_flags_line(cpuinfo, expected):
    assert loading.cpu_has_bf16_units(cpuinfo) is expected


@pytest.mark.parametrize(
    ("cpuinfo", "expected"),
    [
        (AVX2_ONLY, ["avx2"]),
        (AVX512_BF16, ["avx2", "avx512f", "avx512_bf16"]),
        (AMX, ["avx2", "amx_bf16", "amx_tile"]),
        ("", []),
    ],
)
def test_matrix_flags_as_benchmarks_report_them(cpuinfo, expected):
    assert loading.cpu_matrix_flags(cpuinfo) == expected


def test_a_flag_name_elsewhere_in_cpuinfo_does_not_count():
    text = "model name\t: avx512_bf16 marketing name\nflags\t\t: avx2\n"
    assert loading.cpu_has_bf16_units(text) is False


@pytest.mark.parametrize("has_units", [False, True])
def test_bf16_warning_follows_the_detected_capability(has_units, monkeypatch):
    monkeypatch.setattr(loading, "cpu_has_bf16_units", lambda: has_units)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dtype = loading.resolve_dtype("bfloat16", torch.device("cpu"))
    assert dtype == torch.bfloat16
    slow = [w for w in caught if "slower than float32" in str(w.message)]
    assert bool(slow) is (not has_units)


def test_auto_dtype_on_cpu_is_float32_whatever_the_cpu(monkeypatch):
    for has_units in (False, True):
        monkeypatch.setattr(loading, "cpu_has_bf16_units", lambda has=has_units: has)
        assert loading.resolve_dtype("auto", torch.device("cpu")) == torch.float32


# ------------------------------------------------------------ a model that is not the checkpoint


def test_a_head_the_checkpoint_lacks_is_refused(tiny_models):
    """GPT-2 read as an extractive-QA model would get a random qa_outputs head."""
    from biaslens.errors import BiaslensError
    from biaslens.models import BackendConfig, load_model

    config = BackendConfig(device="cpu", model_kind="extractive-qa")
    with pytest.raises(BiaslensError, match=r"2 \(qa_outputs.bias, qa_outputs.weight\).*random"):
        load_model(str(tiny_models["gpt2"]), config)


def test_allowed_missing_weights_are_seeded_and_recorded(tiny_models):
    from biaslens.models import BackendConfig, load_model

    config = BackendConfig(device="cpu", model_kind="extractive-qa", allow_missing_weights=True)
    with pytest.warns(UserWarning, match="random"):
        first = load_model(str(tiny_models["gpt2"]), config)
    with pytest.warns(UserWarning, match="random"):
        second = load_model(str(tiny_models["gpt2"]), config)
    described = first.identity.describe()
    assert described["random_tensors"].startswith("2 (qa_outputs.bias, qa_outputs.weight")
    assert first.identity.cache_key() == second.identity.cache_key()
    plain = load_model(str(tiny_models["gpt2"]), BackendConfig(device="cpu"))
    assert "random_tensors" not in plain.identity.describe()
    head = first.model.qa_outputs.weight
    assert torch.equal(head, second.model.qa_outputs.weight)  # seeded: the same every load


def _copy_with(folder, target, extra: dict):
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(folder, target)
    tensors = load_file(target / "model.safetensors")
    tensors.update(extra)
    save_file(tensors, target / "model.safetensors", metadata={"format": "pt"})
    return target


def test_tensors_the_same_architecture_does_not_use_are_refused(tiny_models, tmp_path):
    from biaslens.errors import BiaslensError
    from biaslens.models import BackendConfig, load_model

    key = "bert.encoder.layer.0.attention.self.lora_A"
    folder = _copy_with(tiny_models["bert-mlm"], tmp_path / "adapter", {key: torch.ones(2, 2)})
    with pytest.raises(BiaslensError, match=rf"1 \({key}\).*runs but does not use"):
        load_model(str(folder), BackendConfig(device="cpu"))


def test_another_architectures_extra_head_is_dropped_and_recorded(tiny_models, tmp_path):
    """BERT's pretraining checkpoint read as a masked LM (the SIB paper's bert-base-uncased)."""
    import shutil

    from transformers import BertConfig, BertForPreTraining

    from biaslens.models import BackendConfig, load_model

    target = tmp_path / "pretraining"
    config = BertConfig.from_pretrained(tiny_models["bert-mlm"])
    torch.manual_seed(0)
    BertForPreTraining(config).save_pretrained(target)
    for file in tiny_models["bert-mlm"].iterdir():
        if file.name not in ("config.json", "model.safetensors"):
            shutil.copy(file, target)
    lm = load_model(str(target), BackendConfig(device="cpu", model_kind="masked"))
    assert lm.kind.value == "masked-lm"
    unused = lm.identity.describe()["unused_checkpoint_tensors"]
    assert unused.startswith("4 (bert.pooler.dense.bias, bert.pooler.dense.weight")


def test_cli_refuses_a_grafted_head_before_any_work(tiny_models, tmp_path, monkeypatch, capsys):
    from tests.test_cli import run_cli

    out = tmp_path / "run"
    code, stdout, stderr = run_cli(
        monkeypatch, capsys,
        "run", "lei-eval", "-m", str(tiny_models["gpt2"]), "--model-kind", "extractive-qa",
        "--domain", "religion", "--limit", "4", "--output", str(out),
        "--data-dir", str(DATA),
    )  # fmt: skip
    assert code == 2, stdout + stderr
    assert "qa_outputs" in stderr and "Traceback" not in stdout + stderr
    assert not out.exists()


def test_a_run_on_allowed_random_tensors_says_so(tiny_models, tmp_path):
    import biaslens
    from biaslens.report.html import write_report

    with pytest.warns(UserWarning, match="random"):
        result = biaslens.run(
            "lei-eval", str(tiny_models["gpt2"]), output=tmp_path / "run", domain="religion",
            limit=4, data_dir=DATA, device="cpu", model_kind="extractive-qa",
            allow_missing_weights=True, report=False,
        )  # fmt: skip
    assert result.summary["model"]["random_tensors"].startswith("2 (qa_outputs")
    assert "random tensor" in result.summary["notes"][0]
    assert result.summary["backend"]["allow_missing_weights"] is True
    html = write_report([result.run_dir]).read_text()
    assert "RANDOM tensors" in html and "qa_outputs.weight" in html
