"""Offline model packages: clear errors when absent, converted copies reused."""

import importlib.util

import pytest

from biaslens.errors import BiaslensError
from biaslens.models.checkpoints import packaged as offline
from biaslens.models.checkpoints.registered import MODELS
from biaslens.models.loader import load_model


def test_missing_model_package_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.startswith("gemma3") else real(name, *a),
    )
    with pytest.raises(BiaslensError, match=r"pip install 'biaslens\[gemma\]'"):
        load_model("gemma-3-270m")


def test_registry_names():
    assert {"smollm2-135m-instruct", "gemma-3-270m", "all-minilm-l6-v2"} <= set(MODELS)


@pytest.mark.slow
def test_smollm2_conversion_is_verified_and_reused(tmp_path, monkeypatch):
    """A copy converted earlier (here the suite's own, copied into an empty cache) is reused;
    a damaged one is converted again, and the new conversion is verified against the GGUF
    model's logits. (One real conversion: the suite's copy is made once per run.)"""
    import shutil

    earlier = offline.converted_smollm2(verbose=False)
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path))
    first = tmp_path / "models" / earlier.name
    shutil.copytree(earlier, first)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert offline.converted_smollm2(verbose=False) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp  # reused, not rebuilt
    with open(first / "model.safetensors", "r+b") as handle:  # damage the copy
        handle.seek(1000)
        handle.write(b"\x00" * 64)
    assert offline.converted_smollm2(verbose=False) == first
    assert (first / "model.safetensors").stat().st_mtime_ns != stamp  # rebuilt after the check
    manifest = (first / "biaslens-conversion.json").read_text()
    assert '"max_logit_difference": 0.0' in manifest


def test_concurrent_first_uses_convert_once(tmp_path, monkeypatch):
    """Two processes (here threads) that need the converted copy at once on a fresh machine:
    the second waits for the first one's conversion and reuses it, instead of converting again
    and replacing the folder the first is reading."""
    import json
    import threading
    import time

    from biaslens.models.checkpoints.local import weights_sha256

    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "cache"))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF stand-in")
    conversions = []

    def convert(source_file, target, source):  # slow enough for both threads to meet
        conversions.append(target)
        time.sleep(0.5)
        target.mkdir(parents=True)
        (target / "model.safetensors").write_bytes(b"weights")
        manifest = {"format": offline.CONVERSION_FORMAT, "source": source,
                    "weights_sha256": weights_sha256(target)}  # fmt: skip
        (target / "biaslens-conversion.json").write_text(json.dumps(manifest))

    monkeypatch.setattr(offline, "_convert_gguf", convert)
    folders = []
    threads = [
        threading.Thread(target=lambda: folders.append(offline.converted_gguf(gguf, "m", False)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(conversions) == 1 and folders == [conversions[0]] * 2
