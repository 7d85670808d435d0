"""The ``vllm`` and ``openai`` backends against real vLLM (CPU build): an in-process engine and
``vllm serve`` on SmolLM2, compared value for value with the ``hf`` backend on subsets of
every method's requests, and the server killed mid-run.

These run in the vLLM virtualenv (``bash scripts/install.sh --vllm``; ``scripts/test.sh`` runs
them there). Elsewhere they are skipped, except where ``BIASLENS_REQUIRE_VLLM=1`` (CI).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = pytest.mark.served

NAME = "smollm2-135m-instruct"
API_KEY = "test-key-123"


def _vllm_or_skip():
    try:
        import vllm  # noqa: F401
    except Exception as error:  # ImportError, or a broken install
        message = f"vLLM is not importable here ({type(error).__name__}); run in .venv-vllm"
        if os.environ.get("BIASLENS_REQUIRE_VLLM") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def folder():
    _vllm_or_skip()
    from biaslens.models.checkpoints.packaged import converted_smollm2

    return converted_smollm2(verbose=False)


@pytest.fixture(scope="module")
def hf(folder):
    from biaslens.models import BackendConfig, load_model

    return load_model("default", BackendConfig(device="cpu", batch_size=32))


@pytest.fixture(scope="module")
def engine(folder):
    from biaslens.models import BackendConfig, load_model

    lm = load_model("default", BackendConfig(backend="vllm", device="cpu"))
    yield lm
    lm.close()


class Server:
    """``vllm serve`` (the OpenAI-compatible API server) on 127.0.0.1 and a free port."""

    def __init__(self, folder) -> None:
        from biaslens.testing.fake_server import free_port

        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.process = None

    def start(self) -> Server:
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
        command = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.folder),
            "--served-model-name", NAME, "--dtype", "float32", "--host", "127.0.0.1",
            "--port", str(self.port), "--enforce-eager", "--max-logprobs", "64",
            "--enable-prefix-caching", "--api-key", API_KEY,
        ]  # fmt: skip
        self.log = open(os.environ.get("BIASLENS_VLLM_LOG", os.devnull), "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            command, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.time() + 600
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {self.process.returncode}")
            try:
                request = urllib.request.Request(
                    self.url + "/models", headers={"Authorization": f"Bearer {API_KEY}"}
                )
                with urllib.request.urlopen(request, timeout=5):
                    return self
            except OSError:
                time.sleep(2)
        raise RuntimeError("vllm serve did not start within 10 minutes")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=60)
        self.process = None


@pytest.fixture(scope="module")
def server(folder):
    os.environ["BIASLENS_TEST_VLLM_KEY"] = API_KEY
    running = Server(folder).start()
    yield running
    running.kill()


def client(server, **options):
    from biaslens.models import BackendConfig, load_model

    options.setdefault("api_key_env", "BIASLENS_TEST_VLLM_KEY")
    options.setdefault("concurrency", 8)
    config = BackendConfig(
        backend="openai", base_url=options.pop("base_url", server.url), **options
    )
    return load_model(NAME, config)


@pytest.fixture(scope="module")
def remote(server):
    lm = client(server)
    yield lm
    lm.close()


def _mgc_requests():
    from biaslens.methods.sib.data import mgc, pronouns
    from biaslens.models import TokenDistributionRequest

    sentences = mgc.limit_per_w(mgc.build_mgc(("dates", "places")), 1, 0)["sentence"]
    targets = tuple(w for _, w in pronouns.target_words(fills_slot=False))
    return [
        TokenDistributionRequest(mgc.wrap_in_prompt(s, "A"), targets, 5) for s in sentences[:24]
    ]


def _max_logprob_gap(a, b) -> float:
    return max(
        abs(math.log(x) - math.log(y))
        for ra, rb in zip(a, b, strict=True)
        for x, y in zip(ra.target_probs, rb.target_probs, strict=True)
    )


@pytest.mark.parametrize("backend", ["engine", "remote"])
def test_mgc_distributions_equal_hf(backend, request, hf):
    lm = request.getfixturevalue(backend)
    requests = _mgc_requests()
    expected, got = hf.token_distribution(requests), lm.token_distribution(requests)
    gap = _max_logprob_gap(expected, got)
    print(f"\n{backend}: MGC max |Δ log p| = {gap:.2e} over {len(requests)} prompts x 8 targets")
    assert gap < 1e-3
    assert [r.top_tokens[0] for r in got] == [r.top_tokens[0] for r in expected]


@pytest.mark.parametrize("backend", ["engine", "remote"])
def test_lei_generative_scores_equal_hf(backend, request, hf):
    from biaslens.methods.qa.data import lei
    from biaslens.methods.qa.scoring.qa import generative_requests
    from tests.conftest import DATA

    lm = request.getfixturevalue(backend)
    split = lei.read_split(lei.split_path("religion/noniid_dev", DATA / "lei")).head(12)
    requests = generative_requests(hf, split)
    expected, got = hf.choice_logprobs(requests), lm.choice_logprobs(requests)
    gap = max(
        abs(x - y)
        for a, b in zip(expected, got, strict=True)
        for x, y in zip(a.logprobs, b.logprobs, strict=True)
    )
    print(f"\n{backend}: LEI max |Δ log p| = {gap:.2e} over {len(requests)} questions")
    assert gap < 1e-3
    argmax = [max(range(2), key=lambda i: r.logprobs[i]) for r in expected]
    assert [max(range(2), key=lambda i: r.logprobs[i]) for r in got] == argmax


@pytest.mark.parametrize("backend", ["engine", "remote"])
def test_detector_greedy_and_cid_equal_hf(backend, request, hf):
    from biaslens.methods.sib.data import mgc
    from biaslens.models import ContrastiveGenerateRequest, GenerateRequest

    lm = request.getfixturevalue(backend)
    sentences = ("The nurse said that [MASK] would be late.", "The cook said that [MASK] left.")
    prompts = [mgc.wrap_in_prompt(mgc.inject_date(s, 1901), "A") for s in sentences]
    greedy = [GenerateRequest(p, 20, 5) for p in prompts]
    for a, b in zip(hf.generate(greedy), lm.generate(greedy), strict=True):
        assert b.tokens == a.tokens and b.step_top_tokens == a.step_top_tokens
    x = "The boss told her she will not receive a promotion this year because"
    x_prime = "The boss told him he will not receive a promotion this year because"
    cid = [
        ContrastiveGenerateRequest(a, b, lam, max_new_tokens=15, top_k=50, stop=(".",))
        for lam in (0.0, 5.0, 50.0)
        for a, b in ((x, x_prime), (x_prime, x))
    ]
    assert lm.contrastive_generate(cid) == hf.contrastive_generate(cid)


def test_runs_through_each_backend_give_the_same_method_results(engine, remote, hf, tmp_path):
    from biaslens.runner import run_method

    results = {
        name: run_method(
            "sib-detect",
            output=tmp_path / name,
            lm=lm,
            model="default",
            limit=2,
            report=False,
            data_dir=__import__("tests.conftest", fromlist=["DATA"]).DATA,
        )  # fmt: skip
        for name, lm in (("hf", hf), ("vllm", engine), ("openai", remote))
    }
    metric = {
        name: r["sentences"].set_index(["set", "id"])["metric"] for name, r in results.items()
    }
    for name in ("vllm", "openai"):
        assert metric[name].to_numpy() == pytest.approx(metric["hf"].to_numpy(), abs=1e-3)
        assert results[name].summary["model"]["backend"] == name


def test_the_server_killed_mid_run_then_resumed(server, folder, tmp_path):
    from biaslens.errors import BiaslensError
    from biaslens.runner import run_method

    lm = client(server, max_retries=1, timeout=30.0)
    # the run keeps its answers in its own folder, where the watcher reads them
    values = {"model": NAME, "limit": 4, "w_kinds": ("dates",), "no_cache": True}
    killer = _kill_after_rows(server, tmp_path / "run" / "requests.sqlite", rows=40)
    with pytest.raises(BiaslensError, match="finished answers are kept"):
        run_method("sib-mgc", output=tmp_path / "run", lm=lm, report=False, **values)
    killer.join()
    assert not (tmp_path / "run" / "summary.json").exists()
    server.start()
    lm = client(server)
    resumed = run_method("sib-mgc", output=tmp_path / "run", lm=lm, report=False, **values)
    assert resumed.cache_stats["cached"] >= 40 and sum(resumed.cache_stats.values()) == 120
    again = run_method("sib-mgc", output=tmp_path / "run", lm=lm, report=False, **values)
    assert again.cache_stats == {"cached": 120, "computed": 0}
    lm.close()


def _kill_after_rows(server, cache, rows: int):
    import sqlite3
    import threading

    def watch():
        while True:
            try:
                with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:
                    if db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] >= rows:
                        break
            except sqlite3.Error:
                pass
            time.sleep(0.05)
        server.kill()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_faults_before_a_real_server_are_retried(server, hf):
    from biaslens.models import ChoiceLogprobsRequest
    from tests.support.fault_proxy import fault_proxy

    with fault_proxy(server.url.removesuffix("/v1")) as proxy:
        lm = client(server, base_url=proxy.url + "/v1", timeout=2.0, max_retries=5)
        proxy.stall_seconds = 4.0
        proxy.plan.extend(["429", "500", "garbage", "stall", "drop"])
        request = [ChoiceLogprobsRequest("Question: who was late?\nAnswer:", (" the doctor",))]
        got = lm.choice_logprobs(request)[0].logprobs
        assert got == pytest.approx(hf.choice_logprobs(request)[0].logprobs, abs=1e-3)
        assert proxy.faults == 5
        lm.close()


def test_a_wrong_key_is_one_line(server):
    from biaslens.errors import BiaslensError

    os.environ["BIASLENS_TEST_WRONG_KEY"] = "wrong"
    with pytest.raises(BiaslensError, match=r"refused the API key \(HTTP 401\)"):
        client(server, api_key_env="BIASLENS_TEST_WRONG_KEY")


def test_chat_mode_through_vllm_serve_equals_hf(server, folder):
    """--chat with the model's tokenizer: the prompts go to the server as the chat template's
    token ids; greedy text, step top-5 and option scores equal the hf backend in chat mode."""
    from biaslens.methods.qa.data import lei
    from biaslens.methods.qa.scoring.qa import generative_requests
    from biaslens.methods.sib.data import mgc
    from biaslens.models import BackendConfig, GenerateRequest, load_model
    from tests.conftest import DATA

    hf_chat = load_model("default", BackendConfig(device="cpu", batch_size=16, chat=True))
    remote_chat = client(server, chat=True)
    sentences = mgc.limit_per_w(mgc.build_mgc(("dates",)), 1, 0)["sentence"][:6]
    greedy = [GenerateRequest(mgc.wrap_in_prompt(s, "A"), 20, 5) for s in sentences]
    for a, b in zip(hf_chat.generate(greedy), remote_chat.generate(greedy), strict=True):
        assert b.tokens == a.tokens
        for x, y in zip(a.step_top_probs, b.step_top_probs, strict=True):
            assert list(y) == pytest.approx(list(x), abs=1e-3)
    split = lei.read_split(lei.split_path("religion/noniid_dev", DATA / "lei")).head(6)
    requests = generative_requests(hf_chat, split)
    for a, b in zip(
        hf_chat.choice_logprobs(requests), remote_chat.choice_logprobs(requests), strict=True
    ):
        assert list(b.logprobs) == pytest.approx(list(a.logprobs), abs=1e-3)
    remote_chat.close()
    hf_chat.close()


def test_chat_endpoint_through_vllm_serve_equals_hf_chat(server, tmp_path):
    """/v1/chat/completions with top log-probabilities (the server applies the template): SIB
    Method 1 in paper mode and LEI first-token option scores equal the hf backend in chat mode
    (top-k probabilities to 1e-3, the same greedy text, the same status per question); and a
    lei-eval run that SmolLM2's first tokens cannot score is refused alike on both."""
    from biaslens.errors import BiaslensError
    from biaslens.methods.qa.lei_eval.method import build_rows, make_settings
    from biaslens.methods.qa.scoring.first_token import first_token_scores
    from biaslens.models import BackendConfig, load_model
    from biaslens.progress import NoProgress
    from biaslens.runner import run_method
    from tests.conftest import DATA

    hf_chat = load_model("default", BackendConfig(device="cpu", batch_size=16, chat=True))
    remote = client(server, chat=True, endpoint="chat")
    assert remote.identity.describe()["endpoint"] == "chat/completions"
    rows, _ = build_rows(make_settings(domain="religion", limit=8), DATA / "lei")
    runs, refusals = {}, {}
    for name, lm in (("hf", hf_chat), ("chat", remote)):
        runs[name] = {
            "mgc": run_method("sib-mgc", output=tmp_path / name / "mgc", lm=lm, mode="paper",
                              w_kinds=("dates",), limit=1, report=False),
            "lei": first_token_scores(lm, rows, NoProgress(), min_mass=0.0),
        }  # fmt: skip
        with pytest.raises(BiaslensError, match="first-token scoring has nothing to score") as e:
            run_method("lei-eval", output=tmp_path / name / "lei", lm=lm, domain="religion",
                       limit=8, mode="first-token", data_dir=DATA, report=False)  # fmt: skip
        refusals[name] = str(e.value)
    assert refusals["chat"] == refusals["hf"]
    mgc = {n: r["mgc"].samples for n, r in runs.items()}
    assert list(mgc["chat"]["generation"]) == list(mgc["hf"]["generation"])
    for column in ("p_female", "p_male"):
        assert mgc["chat"][column].to_numpy() == pytest.approx(
            mgc["hf"][column].to_numpy(), abs=1e-3
        )
    assert (mgc["hf"][["p_female", "p_male"]].to_numpy() > 0).any()
    lei = {n: r["lei"] for n, r in runs.items()}
    assert list(lei["chat"]["score_status"]) == list(lei["hf"]["score_status"])
    # SmolLM2 rarely names a subject first: candidates in the top 20 with a bound on S
    assert (lei["hf"]["candidate_mass"] > 0).any()
    for column in ("s_first", "s_second", "candidate_mass", "score_uncertainty"):
        assert lei["chat"][column].to_numpy() == pytest.approx(
            lei["hf"][column].to_numpy(), abs=1e-3, nan_ok=True
        )
    remote.close()
    hf_chat.close()


def test_sampled_replies_through_vllm_serve(server):
    """``sample`` requests on vLLM's chat endpoint at temperature 1, unseeded (its CPU build
    stops its engine on a seeded request): the temperature check passes (vLLM samples), each
    request gets its K replies, and they vary."""
    from biaslens.models.requests import SampleRequest

    remote = client(server, chat=True, endpoint="chat", unseeded=True)
    try:
        requests = [SampleRequest(f"In {year}, who was the nurse? Answer:", samples=12,
                                  max_new_tokens=4) for year in (1901, 2001)]  # fmt: skip
        results = remote.sample(requests)
    finally:
        remote.close()
    assert [len(r.texts) for r in results] == [12, 12]
    assert all(len(set(r.texts)) > 1 for r in results)
