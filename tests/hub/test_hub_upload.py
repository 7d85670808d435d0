"""An exported probe set pushed to a dataset repo by the real ``huggingface_hub`` client, against
the test hub on 127.0.0.1; offline or without a login, one line and the set stays on disk."""

from __future__ import annotations

import pytest

from .conftest import TOKEN, files_under

pytestmark = pytest.mark.slow


def test_an_exported_set_is_pushed_as_a_dataset_repo(client, tmp_path):
    folder = tmp_path / "simplified"
    done = client.cli("datasets", "export", "sib-simplified", str(folder), "--push-to-hub",
                      "org/sib-simplified", HF_TOKEN=TOKEN)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "pushed to the dataset repo org/sib-simplified" in done.stdout
    repo = client.hub.repos["datasets/org/sib-simplified"]
    pushed = repo.commits[repo.refs["main"]]
    local = {p.relative_to(folder).as_posix(): p.read_bytes() for p in files_under(folder)}
    assert pushed == local and set(local) == {"README.md", "biaslens.json", "data/train.parquet"}
    assert TOKEN not in done.stdout + done.stderr
    posts = client.hub.requests("POST")
    assert posts and all(r["token"] for r in posts)


@pytest.mark.parametrize(
    ("env", "expected"),
    [({"HF_TOKEN": None}, "not logged in to the hub: run `hf auth login` or set HF_TOKEN"),
     ({"HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set")],
)  # fmt: skip
def test_no_login_or_offline_is_one_line_and_keeps_the_set(client, tmp_path, env, expected):
    folder = tmp_path / "simplified"
    done = client.cli("datasets", "export", "sib-simplified", str(folder), "--push-to-hub",
                      "org/other", **env)  # fmt: skip
    assert done.returncode != 0
    assert len(done.error_lines) == 1 and expected in done.error_lines[0]
    assert (folder / "data" / "train.parquet").is_file()  # the export itself is finished and kept
    assert "datasets/org/other" not in client.hub.repos
