"""A hostile hub server: a commit sha, an ETag or a listed file that is a path outside the cache,
and a ``--revision`` that is one. ``huggingface_hub`` builds its cache paths from these strings
unchecked; biaslens refuses each with one line before the client uses it, and nothing is
written outside the Hugging Face cache (the real client against the local test hub)."""

from __future__ import annotations

import pytest

from tests.hub.conftest import client, hub  # noqa: F401 - the test hub's fixtures

pytestmark = pytest.mark.slow


def run_on(client, tmp_path, model="org/tiny-llama", *extra):  # noqa: F811
    return client.cli(
        "run", "sib-mgc", "-m", model, *extra, "--w", "dates", "--limit", "1",
        "--output", str(tmp_path / "run"), cwd=tmp_path / "work",
    )  # fmt: skip


def written_outside(root, *inside) -> list:
    """Files below ``root`` (the test's folder) but not below any of ``inside``."""
    return [
        p for p in root.rglob("*")
        if p.is_file() and not any(folder in p.parents for folder in inside)
    ]  # fmt: skip


@pytest.fixture
def work(tmp_path):
    (tmp_path / "work").mkdir()
    return tmp_path


def check_refused(run, tmp_path, client, *words):  # noqa: F811
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert len(run.error_lines) == 1, run.stderr
    for word in words:
        assert word in run.error_lines[0], run.error_lines
    assert not (tmp_path / "run").exists()
    stray = written_outside(tmp_path, client.home / "hf", client.home / "biaslens-cache")
    assert stray == [], stray


def test_an_etag_that_is_an_absolute_path_writes_nothing_there(client, work):  # noqa: F811
    target = work / "outside" / "pwned"
    client.hub.faults.etag = str(target)
    run = run_on(client, work)
    check_refused(run, work, client, "ETag", "org/tiny-llama")
    assert not target.exists() and not (work / "outside").exists()


@pytest.mark.parametrize("sha", ["../../../../outside/x", "/tmp/outside-sha", "0" * 39 + "/"])
def test_a_commit_that_is_a_path_is_refused_before_any_write(client, work, sha):  # noqa: F811
    client.hub.faults.commit = sha.replace("/tmp/", str(work) + "/")
    run = run_on(client, work)
    check_refused(run, work, client, "not a commit sha", "org/tiny-llama")
    assert not list(client.home.rglob("*outside*"))


def test_a_listed_file_outside_the_snapshot_is_refused(client, work):  # noqa: F811
    client.hub.faults.listed = ("../../../../outside/evil.py",)
    run = run_on(client, work)
    check_refused(run, work, client, "outside the model's folder")


@pytest.mark.parametrize(
    "revision", ["../../../../outside/x", "/abs/ref", "v1/../../x", "a\\b", "main.lock", " "]
)
def test_a_revision_that_is_a_path_is_refused_before_the_hub_is_asked(client, work, revision):  # noqa: F811
    run = run_on(client, work, "org/tiny-llama", "--revision", revision)
    assert run.returncode == 2 and len(run.error_lines) == 1, run.stderr
    assert "not a branch, tag or commit" in run.stderr or "--revision" in run.stderr
    assert client.hub.requests() == []  # nothing asked, nothing written
    assert written_outside(work, client.home / "biaslens-cache") == []


def test_name_at_revision_is_checked_the_same_way(client, work):  # noqa: F811
    run = run_on(client, work, "org/tiny-llama@../../outside")
    assert run.returncode == 2 and "not a branch, tag or commit" in run.stderr, run.stderr
    assert client.hub.requests() == []


def test_an_honest_revision_still_downloads_and_is_found_offline(client, work):  # noqa: F811
    run = run_on(client, work, "org/tiny-llama", "--revision", "v1")
    assert run.returncode == 0, run.stderr
    refs = client.home / "hf" / "hub" / "models--org--tiny-llama" / "refs" / "v1"
    assert refs.read_text() == client.hub.shas["llama-v1"]
    offline = client.cli(
        "run", "sib-mgc", "-m", "org/tiny-llama@v1", "--w", "dates", "--limit", "1",
        "--output", str(work / "offline"), HF_HUB_OFFLINE="1",
    )  # fmt: skip
    assert offline.returncode == 0, offline.stderr
