"""The hub path's rules, without a server: names and revisions, provenance of a snapshot folder,
which files are fetched, one-line errors, and a resumed run that must be the same model."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from biaslens.errors import BiaslensError, ConfigMismatchError
from biaslens.models.checkpoints import hub
from biaslens.models.checkpoints.reference import checkpoint_ref
from biaslens.models.config import BackendConfig
from biaslens.models.loader import load_model
from biaslens.store.provenance import build_info
from biaslens.store.run import RunStore

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_name_at_revision_and_the_revision_option(tmp_path):
    def resolved(name, revision=None):
        ref = checkpoint_ref(name, revision)
        return ref.repo_id, ref.revision

    assert resolved("org/m@v1") == ("org/m", "v1")
    assert resolved("org/m", "v2") == ("org/m", "v2")
    assert resolved("org/m@v1", "v1") == ("org/m", "v1")
    assert resolved("org/m") == ("org/m", None)
    assert (
        checkpoint_ref(str(tmp_path)).path == tmp_path
        and checkpoint_ref(str(tmp_path)).revision is None
    )
    with pytest.raises(BiaslensError, match="--revision says 'v2'"):
        checkpoint_ref("org/m@v1", "v2")
    with pytest.raises(BiaslensError, match="needs both parts"):
        checkpoint_ref("org/m@")
    with pytest.raises(BiaslensError, match="local folder: --revision applies to hub names"):
        checkpoint_ref(str(tmp_path), "v1")
    with pytest.raises(BiaslensError, match="not a branch, tag or commit name"):
        checkpoint_ref("org/m", "../../escape")
    with pytest.raises(BiaslensError, match="not a hub model name"):
        checkpoint_ref("a/b/c")


@pytest.mark.parametrize(
    ("name", "valid"),
    [("gpt2", True), ("deepset/roberta-base-squad2", True), ("a/b/c", False),
     ("/abs/path", False), ("./rel", False), ("has space/x", False), ("x--/y", False)],
)  # fmt: skip
def test_which_names_can_be_hub_models(name, valid):
    assert hub.is_repo_id(name) is valid


def test_a_snapshot_folder_tells_its_repo_and_commit(tmp_path):
    folder = tmp_path / "hub" / "models--org--some-model" / "snapshots" / SHA
    folder.mkdir(parents=True)
    source = hub.snapshot_source(folder, "v1")
    assert source == hub.HubSource("org/some-model", SHA, "v1")
    assert dict(source.describe()) == {
        "repo_id": "org/some-model", "revision": "v1", "commit_sha": SHA,
    }  # fmt: skip
    assert hub.snapshot_source(tmp_path) is None
    assert hub.snapshot_source(tmp_path / "hub" / "datasets--a--b" / "snapshots" / SHA) is None


def test_one_weight_format_is_fetched_and_a_repo_without_one_is_refused():
    both = ["config.json", "model.safetensors", "pytorch_model.bin", "tf_model.h5", "vocab.txt"]
    ignored = hub._ignore_patterns(both, "model 'x'")
    assert "*.bin" in ignored and "*.h5" in ignored and "*.safetensors" not in ignored
    only_bin = hub._ignore_patterns(["config.json", "pytorch_model.bin"], "model 'x'")
    assert "*.bin" not in only_bin
    with pytest.raises(BiaslensError, match=r"model 'x' has no weights .* \.h5, \.json, \.msgpack"):
        hub._ignore_patterns(["config.json", "tf_model.h5", "flax_model.msgpack"], "model 'x'")


def test_no_disk_space_and_unknown_failures_are_one_line_without_the_token(monkeypatch):
    full = hub._one_line(OSError(errno.ENOSPC, "No space left on device"), "model 'org/m'")
    assert "no space left" in str(full) and "HF_HOME" in str(full)
    monkeypatch.setenv("HF_TOKEN", "hf_SecretValue123456789")
    leaked = hub._one_line(RuntimeError("bad header hf_SecretValue123456789 sent"), "model 'm'")
    assert "hf_SecretValue123456789" not in str(leaked) and "\n" not in str(leaked)


def test_transient_failures_are_told_apart_from_final_answers():
    import httpx2

    assert hub._transient_reason(httpx2.ConnectTimeout("slow")) == "timed out"
    assert hub._transient_reason(httpx2.ConnectError("refused")) == "connection failed"
    wrapped = RuntimeError("listing failed")
    wrapped.__cause__ = httpx2.RemoteProtocolError("peer closed")
    assert hub._transient_reason(wrapped) == "connection dropped"
    assert hub._transient_reason(ValueError("no")) is None


def test_revision_applies_to_hub_names_only(tiny_models):
    with pytest.raises(BiaslensError, match="registered model: --revision applies to hub names"):
        load_model("default", BackendConfig(revision="v1"))
    with pytest.raises(BiaslensError, match="local folder: --revision applies to hub names"):
        load_model(str(tiny_models["llama"]), BackendConfig(revision="v1"))
    with pytest.raises(BiaslensError, match="checkpoint is the server's"):
        BackendConfig(backend="openai", revision="v1")


def test_offline_without_the_model_in_the_cache_is_one_line_naming_the_fix():
    with pytest.raises(BiaslensError) as error:
        checkpoint_ref("org/not-downloaded").folder(offline=True)
    assert "hf download org/not-downloaded" in str(error.value)
    assert "HF_HUB_OFFLINE=1" in str(error.value)


def test_cache_identity_includes_the_commit():
    """The same name and files at two commits never share a cached answer."""
    from biaslens.models.base import ModelIdentity, ModelKind

    def identity(commit):
        source = (("repo_id", "org/m"), ("revision", "main"), ("commit_sha", commit))
        return ModelIdentity("org/m", ModelKind.CAUSAL, "f" * 64, source=source)

    assert identity("a" * 40).cache_key() != identity("b" * 40).cache_key()
    assert identity("a" * 40).cache_key() == identity("a" * 40).cache_key()
    bare = ModelIdentity("org/m", ModelKind.CAUSAL, "f" * 64)
    assert bare.cache_key() not in (identity("a" * 40).cache_key(),)


def model_record(commit: str, fingerprint: str = "f" * 64) -> dict:
    return {"name": "org/m", "fingerprint_sha256": fingerprint, "repo_id": "org/m",
            "commit_sha": commit}  # fmt: skip


def test_a_resumed_run_must_be_of_the_same_commit(tmp_path):
    with RunStore(tmp_path, "sib-toy", {"n": 1}, {}, model_record(SHA)) as store:
        store.open()
    RunStore(tmp_path, "sib-toy", {"n": 1}, {}, model_record(SHA)).close()  # same: resumes
    other = "f" * 40
    with pytest.raises(ConfigMismatchError, match=f"at commit {SHA}.*resolves to {other}"):
        RunStore(tmp_path, "sib-toy", {"n": 1}, {}, model_record(other))
    RunStore(tmp_path, "sib-toy", {"n": 1}, {}, model_record(SHA, "e" * 64)).close()


def test_provenance_from_the_own_checkout_names_its_commit_and_state():
    repo = Path(__file__).resolve().parents[2]
    info = build_info()
    assert info["source"] == "checkout"
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    changes = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert info["commit"] == head and info["dirty"] == bool(changes)
    assert info["version"] and info["version"] != "0+unknown"
