"""Benchmark: SIB Method 1 in paper mode and LEI first-token scoring through a real
``/v1/chat/completions`` (``vllm serve`` of SmolLM2-Instruct), against the ``hf`` backend in
``--chat`` mode on the same prompts: requests/s at concurrency 1 (the naive baseline: one
request at a time), 8 and 32, and the agreement (max |Δp| of the step top-5, same greedy text,
max |Δ| of the pronoun masses and of the first-token scores).

Run it in the vLLM virtualenv (``bash scripts/install.sh --vllm``)::

    .venv-vllm/bin/python benchmarks/bench_chat_endpoint.py --mgc 60 --lei 40

It starts ``vllm serve`` itself (127.0.0.1, a free port) and stops it at the end.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402
import numpy as np  # noqa: E402

from biaslens.methods.qa.data import lei  # noqa: E402
from biaslens.methods.qa.scoring.first_token import first_token_scores  # noqa: E402
from biaslens.methods.sib.data import mgc  # noqa: E402
from biaslens.methods.sib.metrics.sib import mass_from_generation  # noqa: E402
from biaslens.methods.sib.scoring.pronouns import PAPER_MAX_NEW_TOKENS, PAPER_TOP_K  # noqa: E402
from biaslens.models import BackendConfig, GenerateRequest, load_model  # noqa: E402
from biaslens.progress import NoProgress  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "datasets"


def masses(results) -> np.ndarray:
    found = [mass_from_generation(r.step_top_tokens, r.step_top_probs) for r in results]
    return np.array([[m["female"], m["male"]] for m in found], dtype=float)


def step_gap(reference, answers) -> float:
    gaps = [
        abs(p - q)
        for a, b in zip(reference, answers, strict=True)
        for x, y in zip(a.step_top_probs, b.step_top_probs, strict=False)
        for p, q in zip(x, y, strict=True)
    ]
    return max(gaps, default=0.0)


def measured(lm, generate: list, rows) -> tuple:
    """``lm``'s MGC replies and LEI first-token scores, each with its rate (requests/s)."""
    start = time.perf_counter()
    answers = lm.generate(generate)
    rate = len(generate) / (time.perf_counter() - start)
    start = time.perf_counter()
    scores = first_token_scores(lm, rows, NoProgress())
    return answers, rate, scores, 2 * len(rows) / (time.perf_counter() - start)


def main() -> None:
    args = harness.workload_arguments(
        __doc__.split("\n")[0], 60, 40, "MGC prompts (paper mode)", "LEI contexts (first-token)"
    )
    print(f"machine: {harness.machine()}; model SmolLM2-135M-Instruct, float32, chat template")
    hf = load_model("default", BackendConfig(device="cpu", batch_size=32, chat=True))
    sentences = mgc.limit_per_w(mgc.build_mgc(("dates", "places")), 10**6, 0)["sentence"]
    generate = [
        GenerateRequest(mgc.wrap_in_prompt(s, "A"), PAPER_MAX_NEW_TOKENS, PAPER_TOP_K)
        for s in list(sentences)[: args.mgc]
    ]
    rows = lei.read_split(lei.split_path("religion/noniid_test", DATA / "lei")).head(args.lei)
    reference, hf_rate, hf_scores, hf_lei_rate = measured(hf, generate, rows)
    with harness.vllm_server() as server:
        print(
            f"{'backend':24} {'MGC paper req/s':>15} {'vs c=1':>7} {'LEI req/s':>10} "
            f"{'vs c=1':>7} {'max|Δp| steps':>14} {'same text':>9} {'max|Δ mass|':>11} "
            f"{'max|ΔS|':>9}"
        )
        print(f"{'hf --chat (in process)':24} {hf_rate:15.2f} {'':>7} {hf_lei_rate:10.2f}")
        baseline = {}
        for concurrency in (1, 8, 32):
            remote = harness.served_model(server, concurrency, chat=True, endpoint="chat")
            remote.generate(generate[:2])  # warm-up
            answers, rate, scores, lei_rate = measured(remote, generate, rows)
            remote.close()
            baseline.setdefault("mgc", rate)
            baseline.setdefault("lei", lei_rate)
            same = np.mean([a.text == b.text for a, b in zip(reference, answers, strict=True)])
            mass = np.nanmax(np.abs(masses(reference) - masses(answers)))
            score_columns = ["s_first", "s_second"]
            delta = np.nanmax(np.abs(hf_scores[score_columns].to_numpy() - scores[score_columns]))
            print(
                f"{f'chat endpoint c={concurrency}':24} {rate:15.2f} "
                f"{rate / baseline['mgc']:6.2f}x {lei_rate:10.2f} "
                f"{lei_rate / baseline['lei']:6.2f}x {step_gap(reference, answers):14.2e} "
                f"{same:9.1%} {mass:11.2e} {delta:9.2e}"
            )
        print(
            f"first-token: the candidates hold {hf_scores['candidate_mass'].mean():.1%} of the "
            f"first answer token on average; {hf_scores['s_first'].isna().mean():.1%} of the "
            "questions have neither candidate in the top-20"
        )
    hf.close()


if __name__ == "__main__":
    main()
