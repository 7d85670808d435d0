"""Shared fixtures: tiny random models of every kind, built from a config at test time.

Each model gets a tokenizer trained here by the ``tokenizers`` library on MGC-style text, is
saved to a temporary folder and is loaded back by tests through the same path users use
(``load_model(path)``). Builders live in ``biaslens.testing.tiny_models``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


from tests.workers import cores_per_worker, worker_count  # noqa: E402  (nothing heavy)

if "PYTEST_XDIST_WORKER" in os.environ:
    # before torch is imported; the subprocesses a test starts inherit it
    for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[_threads] = str(cores_per_worker())

import pytest  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from biaslens.testing.tiny_models import BUILDERS  # noqa: E402

hf_logging.disable_progress_bar()

DATA = Path(__file__).resolve().parent / "fixtures" / "datasets"
"""Small stand-ins for the public benchmark data (``scripts/make_test_data.py``), committed so
that the suite runs on a fresh clone."""
FULL_DATA_ENV = "BIASLENS_DATA_DIR"
REQUIRE_FULL_DATA_ENV = "BIASLENS_REQUIRE_DATA"


def full_data_dir() -> Path:
    """The full public benchmark data (``$BIASLENS_DATA_DIR``) for the tests that check its exact
    contents. Without it those tests are skipped with the reason, except where
    ``BIASLENS_REQUIRE_DATA=1`` (CI), where that is a failure."""
    value = os.environ.get(FULL_DATA_ENV)
    folder = Path(value) if value else None
    if folder is not None and (folder / "lei").is_dir() and (folder / "winogender").is_dir():
        return folder
    message = (
        f"the full benchmark data is not available (set {FULL_DATA_ENV} to a folder holding "
        "lei/, unqover/ and winogender/)"
    )
    if os.environ.get(REQUIRE_FULL_DATA_ENV) == "1":
        pytest.fail(message)
    pytest.skip(message)


REPOSITORY = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``slow`` tests (real models, coverage simulations: up to minutes each) run first,
    dealt in turn to the pytest-xdist workers: one that started last would keep its worker
    busy long after the others ran out of work. (``--dist worksteal`` first sends each
    worker a contiguous share of the list, in worker order: share k begins with slow tests
    k, k + n, k + 2n …; the workers then steal from each other's ends.)"""
    workers = worker_count()
    slow, rest = [], []
    for item in items:
        (slow if item.get_closest_marker("slow") else rest).append(item)
    ordered: list[pytest.Item] = []
    for k in range(workers):
        share = (len(items) - len(ordered)) // (workers - k)  # as worksteal sends it
        mine = slow[k::workers]
        taken = max(0, share - len(mine))
        ordered += mine + rest[:taken]
        del rest[:taken]
    items[:] = ordered + rest


@pytest.fixture(scope="session", autouse=True)
def nothing_written_into_the_clone() -> Iterator[None]:
    """The suite writes its runs under temporary folders, never into the repository's own
    ``runs/`` (a test that runs without --output changes to a temporary working directory)."""
    runs = REPOSITORY / "runs"

    def entries() -> set[Path]:
        return set(runs.glob("*/*")) if runs.is_dir() else set()

    before = entries()
    yield
    written = sorted(str(p.relative_to(REPOSITORY)) for p in entries() - before)
    assert not written, f"tests wrote run folders into the repository: {written}"


@pytest.fixture(autouse=True)
def working_directory_of_its_own(tmp_path_factory, monkeypatch) -> None:
    """Each test runs in an empty working directory of its own: a run without --output (under
    ``runs/``) or any other relative path lands there, never in the clone."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session", autouse=True)
def private_user_cache(tmp_path_factory) -> Iterator[Path]:
    """The suite's own user cache (batch-size memo, file hashes): tests neither read what the
    user's runs remembered nor leave sizes measured while the suite loads the machine. Its
    converted models (SmolLM2's safetensors copy) are the one thing the suite's pytest-xdist
    workers share: the first to need one converts it, under the conversion's file lock, and
    the others wait for it instead of converting it again."""
    folder = tmp_path_factory.mktemp("user-cache")
    base = tmp_path_factory.getbasetemp()
    run_root = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    shared = run_root / "converted-models"
    shared.mkdir(exist_ok=True)
    (folder / "models").symlink_to(shared, target_is_directory=True)
    previous = os.environ.get("BIASLENS_CACHE_DIR")
    os.environ["BIASLENS_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("BIASLENS_CACHE_DIR", None)
    else:
        os.environ["BIASLENS_CACHE_DIR"] = previous


@pytest.fixture(autouse=True)
def no_ray_runtime_outlives_its_test() -> Iterator[None]:
    """A local Ray runtime that a test starts in its body (a run with ``--data-parallel``) is
    shut down as the test ends: its processes keep the working directory they started in,
    often the test's own temporary folder, which is removed when the test passes, and replicas
    that a later test of the same process starts there die loading torch. A runtime that a
    module's fixture starts is that fixture's to end."""
    ray = sys.modules.get("ray")
    running = ray is not None and ray.is_initialized()
    yield
    ray = sys.modules.get("ray")
    if not running and ray is not None and ray.is_initialized():
        ray.shutdown()


@pytest.fixture(autouse=True)
def private_request_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test's own shared request cache: a test counts the requests its runs compute, and
    one test's answers must not stand in for another's."""
    folder = tmp_path_factory.mktemp("request-cache")
    monkeypatch.setenv("BIASLENS_REQUEST_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def runs_match_the_results_reference(request, monkeypatch) -> None:
    """Every run a test finishes is compared with the results reference (each file and column
    declared, with a meaning); tests that build deliberately odd run folders are marked
    ``odd_run_folder``."""
    if request.node.get_closest_marker("odd_run_folder"):
        return
    from biaslens.framework.registry import methods
    from biaslens.store.output_files import check_run
    from biaslens.store.run import RunStore

    write_summary = RunStore.write_summary

    def checked(self, *args, **kwargs):
        summary = write_summary(self, *args, **kwargs)
        spec = methods().get(self.method)
        if spec is not None and spec.outputs:  # (a test's own toy method declares none)
            problems = check_run(self.root, spec.outputs, spec.meaning)
            assert not problems, f"{self.root} differs from the results reference: {problems}"
        return summary

    monkeypatch.setattr(RunStore, "write_summary", checked)


@pytest.fixture(scope="session")
def full_data() -> Path:
    return full_data_dir()


@pytest.fixture(scope="session")
def unqover_data(tmp_path_factory) -> Path:
    """The fixture data with UnQover activity lists of two attributes each (small complete
    designs for UnQover runs with a --limit)."""
    from tests.helpers import few_attribute_lists

    target = tmp_path_factory.mktemp("unqover-data")
    for name in ("lei", "winogender"):
        (target / name).symlink_to(DATA / name)
    return few_attribute_lists(DATA, target)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """Folders of tiny random models of each kind (built once per test session)."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="session")
def tiny_backends(tiny_models):
    """Loaded backends (batch size 3, so that batching and padding are exercised)."""
    from biaslens.models import BackendConfig, load_model

    config = BackendConfig(device="cpu", batch_size=3)
    return {name: load_model(str(path), config) for name, path in tiny_models.items()}


ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
"""Screenshots of the browser tests (kept after the run; ignored by git)."""
CHROMIUM = Path(os.environ.get("BIASLENS_CHROMIUM", "/usr/bin/chromium"))


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium (the Debian package) driven by Playwright.

    Without Chromium the browser tests are skipped, except where ``BIASLENS_REQUIRE_BROWSER=1``
    (CI), where that is a failure."""
    if not CHROMIUM.exists():
        message = f"headless Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("BIASLENS_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A fresh page that records script errors and dialogs (an XSS would open one).

    The pages' Content-Security-Policy is bypassed: escaping alone must keep hostile text
    inert (and Playwright's waiting helpers need script evaluation)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.errors, page.dialogs = [], []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    context.close()


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot under test-artifacts/screenshots/."""
    path = ARTIFACTS / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


SERVED_NAME = "tiny-llama"
"""The model name the fake OpenAI-compatible server answers to."""


@pytest.fixture(scope="module")
def served(tiny_models):
    """The tiny Llama behind the fake server (and its model, for other servers)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from biaslens.testing.fake_server import Faults, create_app, serve

    folder = tiny_models["llama"]
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    faults = Faults()
    with serve(create_app(model, tokenizer, SERVED_NAME, faults, max_model_len=256)) as url:
        yield {
            "url": url,
            "folder": folder,
            "model": model,
            "tokenizer": tokenizer,
            "faults": faults,
        }


# ------------------------------------------------------------------ the source tree untouched
SOURCE_TREE = Path(__file__).resolve().parents[1]
LEFT_ALONE = (
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".venv",
    "test-artifacts/",
    ".hypothesis/",
)
"""What a run of the suite may leave in the source tree (caches, the environments, the
artefacts folder CI keeps, hypothesis's example database, made to be shared)."""


def _tree_state() -> set[str] | None:
    """The tree's changed, new and ignored entries as git lists them (ignored folders once);
    None outside a git checkout."""
    import subprocess

    listed = subprocess.run(
        ["git", "-C", str(SOURCE_TREE), "status", "--porcelain", "--ignored=matching",
         "--untracked-files=normal"],
        capture_output=True, text=True,
    )  # fmt: skip
    if listed.returncode != 0:
        return None
    return {line for line in listed.stdout.splitlines() if not any(p in line for p in LEFT_ALONE)}


def pytest_sessionstart(session) -> None:
    if not hasattr(session.config, "workerinput"):  # once, in the process that runs them all
        session.config._tree_before = _tree_state()


def pytest_sessionfinish(session, exitstatus) -> None:
    """A test that writes into the source tree (a build's ``build/`` folder, a file beside
    the code) fails the session, named by what it left: two workers writing one path race."""
    before = getattr(session.config, "_tree_before", None)
    after = _tree_state() if before is not None else None
    if after is None or after <= before:
        return
    left = sorted(after - before)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(f"tests wrote into the source tree: {', '.join(left)}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _no_figure_left_open():
    """Each test starts with no pyplot figure open: figures a test leaves open would otherwise
    pile up in its worker until matplotlib's more-than-20 warning breaks another test's
    one-line output check."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
