"""Models by their hub names, downloaded for real by ``huggingface_hub`` from the test hub on
127.0.0.1 (no mocks of the client): each model class runs, revisions are pinned and recorded,
the cache and a resumed run never mix commits, and every failure is one line."""

from __future__ import annotations

import json

import pytest
import yaml

from .conftest import TOKEN, files_under

pytestmark = pytest.mark.slow


def summary_of(folder) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_a_hub_name_downloads_and_runs_with_its_commit_recorded(client, tmp_path):
    run = client.cli(
        "run", "sib-mgc", "-m", "org/tiny-llama", "--w", "dates", "--limit", "1",
        "--output", str(tmp_path / "run"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    sha = client.hub.shas["llama"]
    model = summary_of(tmp_path / "run")["model"]
    assert (model["repo_id"], model["revision"], model["commit_sha"]) == (
        "org/tiny-llama", "main", sha,
    )  # fmt: skip
    assert model["fingerprint_sha256"] and model["weights_sha256"]
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["model"]
    assert recorded["commit_sha"] == sha and recorded["repo_id"] == "org/tiny-llama"
    assert sha in (tmp_path / "run" / "report.html").read_text()
    snapshot = client.home / "hf" / "hub" / "models--org--tiny-llama" / "snapshots" / sha
    assert (snapshot / "model.safetensors").is_file()
    # the same command again: nothing downloaded again, every answer reused
    gets_before = len(client.hub.requests("GET", "/resolve/"))
    again = client.cli(
        "run", "sib-mgc", "-m", "org/tiny-llama", "--w", "dates", "--limit", "1",
        "--output", str(tmp_path / "run"),
    )  # fmt: skip
    assert again.returncode == 0 and "0 computed, 30 reused" in again.stdout
    assert len(client.hub.requests("GET", "/resolve/")) == gets_before


def test_every_model_class_downloads_and_runs_through_the_api(client, unqover_data, tmp_path):
    """Masked, seq2seq and extractive-QA models by hub name, through ``biaslens.run`` and
    ``biaslens.load_model``."""
    code = f"""
import json, biaslens
out = {{}}
for name, method, extra in [
    ("org/tiny-bert-mlm", "sib-mgc", dict(w_kinds=("dates",), limit=1)),
    ("org/tiny-t5", "sib-mgc", dict(w_kinds=("dates",), limit=1)),
    ("org/tiny-roberta-qa", "unqover", dict(limit=12, data_dir={str(unqover_data)!r})),
]:
    result = biaslens.run(method, model=name, output={str(tmp_path)!r} + "/" + name.split("/")[1],
                          device="cpu", **extra)
    out[name] = result.summary["model"]
lm = biaslens.load_model("org/tiny-llama", device="cpu")
out["load_model"] = lm.identity.describe()
print(json.dumps(out))
"""
    run = client.python(code)
    assert run.returncode == 0, run.stderr
    models = json.loads(run.stdout.strip().splitlines()[-1])
    for name, kind in [
        ("org/tiny-bert-mlm", "masked-lm"),
        ("org/tiny-t5", "seq2seq-lm"),
        ("org/tiny-roberta-qa", "extractive-qa"),
    ]:
        short = name.split("/")[1].removeprefix("tiny-")
        assert models[name]["kind"] == kind
        assert models[name]["commit_sha"] == client.hub.shas[short]
        assert models[name]["repo_id"] == name
    assert models["load_model"]["commit_sha"] == client.hub.shas["llama"]


def test_two_revisions_give_two_identities_and_numbers(client, tmp_path):
    main = client.cli(
        "run", "sib-mgc", "-m", "org/tiny-llama", "--w", "dates", "--limit", "1",
        "--output", str(tmp_path / "main"),
    )  # fmt: skip
    tagged = client.cli(
        "run", "sib-mgc", "-m", "org/tiny-llama", "--revision", "v1", "--w", "dates",
        "--limit", "1", "--output", str(tmp_path / "v1"),
    )  # fmt: skip
    pinned = client.cli(
        "run", "sib-mgc", "-m", "org/tiny-llama@v1", "--w", "dates", "--limit", "1",
        "--output", str(tmp_path / "at"),
    )  # fmt: skip
    assert main.returncode == tagged.returncode == pinned.returncode == 0, tagged.stderr
    first, second = summary_of(tmp_path / "main")["model"], summary_of(tmp_path / "v1")["model"]
    assert first["commit_sha"] == client.hub.shas["llama"]
    assert second["commit_sha"] == client.hub.shas["llama-v1"] and second["revision"] == "v1"
    assert summary_of(tmp_path / "at")["model"]["commit_sha"] == client.hub.shas["llama-v1"]
    assert first["fingerprint_sha256"] != second["fingerprint_sha256"]
    import pandas as pd

    p_main = pd.read_parquet(tmp_path / "main" / "samples.parquet")["p_female"]
    p_v1 = pd.read_parquet(tmp_path / "v1" / "samples.parquet")["p_female"]
    assert (p_main - p_v1).abs().max() > 1e-6  # other weights, other numbers


def test_a_resumed_run_whose_name_moved_to_another_commit_is_refused(client, tmp_path):
    args = ("run", "sib-mgc", "-m", "org/tiny-llama", "--w", "dates", "--limit", "1",
            "--output", str(tmp_path / "run"))  # fmt: skip
    assert client.cli(*args).returncode == 0
    repo = client.hub.repos["org/tiny-llama"]
    old, new = client.hub.shas["llama"], client.hub.shas["llama-v1"]
    repo.refs["main"] = new  # someone pushed to main
    try:
        moved = client.cli(*args)
        assert moved.returncode != 0
        assert len(moved.error_lines) == 1 and old in moved.stderr and new in moved.stderr
        assert f"--revision {old}" in moved.stderr
        pinned = client.cli(*args, "--revision", old)
        assert pinned.returncode == 0 and "0 computed, 30 reused" in pinned.stdout, pinned.stderr
    finally:
        repo.refs["main"] = old


def test_offline_refuses_an_uncached_model_and_says_how_to_fetch(client, tmp_path):
    for extra, env in [((), {"HF_HUB_OFFLINE": "1"}), (("--offline",), {})]:
        run = client.cli(
            "run", "sib-mgc", "-m", "org/tiny-llama", "--limit", "1", *extra,
            "--output", str(tmp_path / "off"), **env,
        )  # fmt: skip
        assert run.returncode != 0 and "Traceback" not in run.stderr
        assert len(run.error_lines) == 1, run.stderr
        assert "HF_HUB_OFFLINE=1" in run.stderr and "hf download org/tiny-llama" in run.stderr
    assert not client.hub.requests()  # nothing was asked of the hub
    assert not (tmp_path / "off").exists()
    # once downloaded, the same model runs offline
    assert client.cli("run", "sib-mgc", "-m", "org/tiny-llama", "--limit", "1",
                      "--w", "dates", "--output", str(tmp_path / "on")).returncode == 0  # fmt: skip
    client.hub.reset()
    offline = client.cli(
        "run", "sib-mgc", "-m", "org/tiny-llama", "--limit", "1", "--w", "dates",
        "--output", str(tmp_path / "cached"), HF_HUB_OFFLINE="1",
    )  # fmt: skip
    assert offline.returncode == 0, offline.stderr
    assert not client.hub.requests()
    assert summary_of(tmp_path / "cached")["model"]["commit_sha"] == client.hub.shas["llama"]


def test_a_gated_model_needs_a_token_that_reaches_no_file(client, tmp_path):
    args = ("run", "sib-mgc", "-m", "org/gated-llama", "--w", "dates", "--limit", "1",
            "--output", str(tmp_path / "gated"))  # fmt: skip
    refused = client.cli(*args)
    assert refused.returncode != 0 and len(refused.error_lines) == 1, refused.stderr
    assert "gated" in refused.stderr and "hf auth login" in refused.stderr
    wrong = client.cli(*args, HF_TOKEN="hf_SomeOtherTokenWithoutAccess99")
    assert wrong.returncode != 0 and "no access" in wrong.stderr
    assert "hf_SomeOtherTokenWithoutAccess99" not in wrong.stderr + wrong.stdout
    allowed = client.cli(*args, HF_TOKEN=TOKEN)
    assert allowed.returncode == 0, allowed.stderr
    assert any(r["token"] for r in client.hub.requests(contains="gated-llama"))
    assert TOKEN not in allowed.stdout + allowed.stderr
    for path in files_under(tmp_path / "gated"):
        assert TOKEN.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("model", "extra", "expected"),
    [
        ("org/no-such-model", (), "no such model on the hub"),
        ("org/tiny-llama", ("--revision", "no-such-branch"), "no such revision"),
        ("org/tf-only", (), "no weights transformers can load"),
        ("not a/valid//name", (), "unknown model"),
    ],
)
def test_bad_names_are_one_line_errors_naming_the_model(client, tmp_path, model, extra, expected):
    run = client.cli(
        "run", "sib-mgc", "-m", model, *extra, "--limit", "1", "--output", str(tmp_path / "r")
    )
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert len(run.error_lines) == 1, run.stderr
    assert expected in run.stderr and model.split("@")[0] in run.stderr
    assert not (tmp_path / "r").exists()
    hub_cache = client.home / "hf" / "hub"
    assert not list(hub_cache.glob("models--*/snapshots/*/*.safetensors"))


def test_an_interrupted_download_is_never_used_and_resumes(client, tmp_path):
    """Every transfer of the weights drops half-way: the run stops with one line, nothing
    partial is used (offline refuses the incomplete snapshot), and the next run fetches only
    what is missing."""
    client.hub.faults.drop_after = {"model.safetensors": 1000}
    args = ("run", "sib-mgc", "-m", "org/tiny-llama", "--w", "dates", "--limit", "1",
            "--output", str(tmp_path / "run"))  # fmt: skip
    failed = client.cli(*args, BIASLENS_HUB_RETRIES="1")
    assert failed.returncode != 0 and len(failed.error_lines) == 1, failed.stderr
    assert "org/tiny-llama" in failed.stderr and "Traceback" not in failed.stderr
    assert not (tmp_path / "run").exists()
    blobs = client.home / "hf" / "hub" / "models--org--tiny-llama" / "blobs"
    assert not list(blobs.glob("*.incomplete"))
    offline = client.cli(*args, HF_HUB_OFFLINE="1")
    assert offline.returncode != 0 and "not (completely)" in offline.stderr
    config_gets = len(client.hub.requests("GET", "/config.json"))
    assert config_gets == 1
    client.hub.faults.drop_after = {}
    resumed = client.cli(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert len(client.hub.requests("GET", "/config.json")) == 1  # kept from the first run


def test_a_dropped_transfer_resumes_with_a_range_request(client, tmp_path, tiny_models):
    """A weight file over the client's 10 MiB block, dropped once past the first block, is
    resumed in the same call with a Range request (206) and loads whole."""
    from .conftest import variant_folder

    big = variant_folder(tiny_models["llama"], tmp_path / "big", seed=2, intermediate_size=24_000)
    size = (big / "model.safetensors").stat().st_size
    assert size > 11 * 2**20
    client.hub.add_folder("org/big-llama", big, "main")
    client.hub.faults.drop_after = {"model.safetensors": 10 * 2**20 + 4096}
    client.hub.faults.drop_times = 1
    run = client.cli(
        "run", "sib-mgc", "-m", "org/big-llama", "--w", "dates", "--limit", "1",
        "--output", str(tmp_path / "run"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    ranged = [r for r in client.hub.requests("GET", "model.safetensors") if r["range"]]
    assert ranged and ranged[0]["range"].startswith("bytes=10485760-")
    assert summary_of(tmp_path / "run")["model"]["weights_sha256"]


def test_server_errors_are_retried_with_back_off_then_one_line(client, tmp_path):
    client.hub.faults.server_errors = 2
    args = ("run", "sib-mgc", "-m", "org/tiny-llama", "--w", "dates", "--limit", "1")
    recovered = client.cli(*args, "--output", str(tmp_path / "a"))
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stderr.count("retrying") == 2
    client.hub.faults.server_errors = 1000
    down = client.cli(  # an empty cache: nothing to fall back on
        *args, "--output", str(tmp_path / "b"), BIASLENS_HUB_RETRIES="3",
        HF_HOME=str(tmp_path / "empty-cache"),
    )  # fmt: skip
    assert down.returncode != 0 and len(down.error_lines) == 1, down.stderr
    assert "HTTP 503" in down.stderr and "after 3 tries" in down.stderr
    assert "org/tiny-llama" in down.stderr


def test_a_stalled_hub_times_out_then_a_cached_model_still_runs(client, tmp_path):
    args = ("run", "sib-mgc", "-m", "org/tiny-llama", "--w", "dates", "--limit", "1")
    client.hub.faults.stall_seconds = 3
    stalled = client.cli(
        *args, "--output", str(tmp_path / "a"), HF_HUB_ETAG_TIMEOUT="1", BIASLENS_HUB_RETRIES="2"
    )
    assert stalled.returncode != 0 and "timed out" in stalled.stderr, stalled.stderr
    client.hub.faults.stall_seconds = 0
    assert client.cli(*args, "--output", str(tmp_path / "b")).returncode == 0
    client.hub.faults.stall_seconds = 3
    cached = client.cli(
        *args, "--output", str(tmp_path / "c"), HF_HUB_ETAG_TIMEOUT="1", BIASLENS_HUB_RETRIES="1"
    )
    assert cached.returncode == 0, cached.stderr
    assert "using the cached snapshot" in cached.stderr


def test_the_cid_encoder_is_a_hub_name_too(client, tmp_path, tiny_models):
    from .conftest import tiny_sentence_encoder

    encoder = tiny_sentence_encoder(tiny_models["bert-mlm"], tmp_path / "encoder")
    sha = client.hub.add_folder("org/tiny-encoder", encoder, "main", "v1")
    run = client.cli(
        "run", "cid-sensitivity", "-m", "org/tiny-llama", "--encoder", "org/tiny-encoder@v1",
        "--type", "gender", "--variants", "1", "--lam", "0", "50", "--max-new-tokens", "3",
        "--output", str(tmp_path / "sens"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = summary_of(tmp_path / "sens")
    assert summary["encoder"] == "org/tiny-encoder@v1"
    assert summary["encoder_source"] == {
        "name": "org/tiny-encoder@v1", "repo_id": "org/tiny-encoder", "revision": "v1",
        "commit_sha": sha,
    }  # fmt: skip
    assert summary["model"]["commit_sha"] == client.hub.shas["llama"]
