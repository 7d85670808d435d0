"""A hub-compatible server on 127.0.0.1 publishing the tiny models, and runs of biaslens against
it in subprocesses (``huggingface_hub`` reads ``HF_ENDPOINT`` and ``HF_HUB_OFFLINE`` when it is
imported, and this test process is offline)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.hub_server import Hub, serve_hub

TOKEN = "hf_TestTokenThatMustNeverBeWritten0123"
"""The gated repo's token: no file or message of a run may contain it."""


def variant_folder(source: Path, target: Path, seed: int, **config_changes) -> Path:
    """A copy of a tiny model with other weights (perturbed with ``seed``) or another config."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    shutil.copytree(source, target)
    if config_changes:
        config = AutoConfig.from_pretrained(source)
        for key, value in config_changes.items():
            setattr(config, key, value)
        torch.manual_seed(seed)
        AutoModelForCausalLM.from_config(config).save_pretrained(target)
        return target
    model = AutoModelForCausalLM.from_pretrained(source)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.5)
    model.save_pretrained(target)
    return target


def tiny_sentence_encoder(source: Path, target: Path) -> Path:
    """A sentence-transformers folder (mean pooling) around a tiny BERT's encoder."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(str(source))
    pooling = Pooling(transformer.get_embedding_dimension(), "mean")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(target))
    return target


@dataclass
class HubRun:
    """The result of a biaslens subprocess against the test hub."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]


class HubClient:
    """Runs ``biaslens`` (or Python code) online against the test hub, with its own HF cache."""

    def __init__(self, hub: Hub, endpoint: str, home: Path) -> None:
        self.hub, self.endpoint, self.home = hub, endpoint, home

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HF_HOME")
        }
        env.update(
            HF_ENDPOINT=self.endpoint,
            HF_HOME=str(self.home / "hf"),
            BIASLENS_CACHE_DIR=str(self.home / "biaslens-cache"),
            BIASLENS_HUB_BACKOFF="0.05",
            HF_HUB_DISABLE_TELEMETRY="1",
            PYTHONUNBUFFERED="1",
            COLUMNS="200",
        )
        env.update(extra)
        return {k: v for k, v in env.items() if v is not None}

    def cli(self, *args: str, cwd: Path | None = None, python: str | None = None, **env) -> HubRun:
        command = [python or sys.executable, "-m", "biaslens", *args]
        done = subprocess.run(
            command, capture_output=True, text=True, env=self.env(**env), cwd=cwd, timeout=600
        )
        return HubRun(done.returncode, done.stdout, done.stderr)

    def python(self, code: str, **env) -> HubRun:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=self.env(**env),
            timeout=600,
        )  # fmt: skip
        return HubRun(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def hub(tiny_models, tmp_path_factory):
    """The test hub: the tiny models of every kind as ``org/tiny-<name>``, the tiny Llama at two
    commits (``main`` and tag ``v1``, other weights), a gated copy, a repo without PyTorch
    weights."""
    root = tmp_path_factory.mktemp("hub-models")
    hub = Hub()
    shas = {}
    for name in ("bert-mlm", "llama", "t5", "roberta-qa"):
        shas[name] = hub.add_folder(f"org/tiny-{name}", tiny_models[name], "main")
    other = variant_folder(tiny_models["llama"], root / "llama-v1", seed=1)
    shas["llama-v1"] = hub.add_folder("org/tiny-llama", other, "v1")
    hub.repo("org/gated-llama", gated_token=TOKEN)
    hub.add_folder("org/gated-llama", tiny_models["llama"], "main")
    hub.repo("org/tf-only").add(
        {"config.json": (tiny_models["llama"] / "config.json").read_bytes(), "tf_model.h5": b"x"}
    )
    with serve_hub(hub) as endpoint:
        hub.shas = shas
        yield hub, endpoint


@pytest.fixture
def client(hub, tmp_path) -> HubClient:
    """A client with a fresh HF cache and biaslens cache for each test."""
    server, endpoint = hub
    server.reset()  # every test starts without faults or log
    return HubClient(server, endpoint, tmp_path)


def files_under(folder: Path) -> list[Path]:
    return [p for p in Path(folder).rglob("*") if p.is_file()]
