"""Benchmark: ``--batch-size auto`` against every fixed batch size, with a fresh size memo, the
memo of the previous run, memos poisoned too small and too large, and a memo written while
other work shared the cores.

Workloads (the same requests for every row, one model loaded once, its batch sizers cleared
before each run): MGC exact scoring (``token_distribution``, instruction prompt A) and LEI
generative choice scoring (``choice_logprobs``) on SmolLM2. Each configuration runs
``--repeats`` times, alternating with the others; its best time counts.

The naive baseline is the previous ``auto``: it trusted a remembered size for ever, so a memo
poisoned at N ran at fixed N — the "fixed N" rows. Prints requests/s, each row's rate as a
fraction of the best fixed size, and the size each ``auto`` run ended at. Goal: every ``auto``
row ≥ 0.95 of the best fixed size (or the probing cost that keeps it below, on a workload this
short).

    python benchmarks/bench_batch_auto.py --prompts 400 --questions 200
    python benchmarks/bench_batch_auto.py --workloads mgc --prompts 3000 --sizes 64,128,256 \
        --repeats 1                   # the whole MGC set, fixed sizes near its best only
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from biaslens.methods.qa.data import lei  # noqa: E402
from biaslens.methods.qa.scoring.qa import generative_requests  # noqa: E402
from biaslens.methods.sib.data import mgc  # noqa: E402
from biaslens.models import BackendConfig, load_model  # noqa: E402
from biaslens.models.requests import RequestType, TokenDistributionRequest  # noqa: E402
from biaslens.models.runtime.batching import AUTO_MAX_SIZE_CPU, BatchSizeMemo  # noqa: E402

LEI_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "lei"
FIXED = (8, 16, 32, 64, 128, 256)


def _busy(stop) -> None:
    """Other work on the machine: matmuls on every core until ``stop`` is set."""
    import torch

    a = torch.randn(1024, 1024)
    while not stop.is_set():
        a @ a


class Workload:
    def __init__(self, name, unit, request_type, call, requests):
        self.name, self.unit, self.request_type = name, unit, request_type
        self.call, self.requests = call, requests


def workloads(lm, args) -> list[Workload]:
    builders = {"mgc": mgc_workload, "lei": lei_workload}
    names = args.workloads.split(",")
    unknown = set(names) - set(builders)
    if unknown:
        raise SystemExit(f"unknown workloads {sorted(unknown)}; choose from {sorted(builders)}")
    return [builders[name](lm, args) for name in names]


def mgc_workload(lm, args) -> Workload:
    texts = [mgc.wrap_in_prompt(s, "A") for s in mgc.build_mgc()["sentence"]][: args.prompts]
    targets = (" he", " she", " him", " her", " his", " hers", " man", " woman")
    requests = [TokenDistributionRequest(t, targets, 5) for t in texts]
    return Workload(
        f"MGC exact, {len(requests)} prompts",
        "prompts",
        RequestType.TOKEN_DISTRIBUTION,
        lm.token_distribution,
        requests,
    )


def lei_workload(lm, args) -> Workload:
    rows = lei.read_split(lei.split_path("religion/noniid_test", args.lei_dir))
    requests = generative_requests(lm, rows.head(args.questions // 2))
    return Workload(
        f"LEI choice scoring, {len(requests)} questions",
        "questions",
        RequestType.CHOICE_LOGPROBS,
        lm.choice_logprobs,
        requests,
    )


def timed_run(lm, work: Workload, batch_size) -> tuple[float, int]:
    """Seconds of one run at ``batch_size`` and the size the run ended at."""
    harness.set_batch_size(lm, batch_size)
    seconds, _ = harness.timed(lambda: work.call(work.requests))
    return seconds, lm.sizer(work.request_type).size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--prompts", type=int, default=400)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--lei-dir", type=Path, default=LEI_DIR)
    parser.add_argument("--workloads", default="mgc,lei", help="comma-separated: mgc, lei")
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, FIXED)),
        help="fixed batch sizes to compare with (comma-separated)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    harness.start()
    lm = load_model(args.model, BackendConfig(device="cpu"))
    memo = BatchSizeMemo()
    for work in workloads(lm, args):
        work.call(work.requests[:2])  # load and warm up
        lm.sizers.clear()
        best: dict[str, tuple[float, int]] = {}

        def record(label, seconds, size, best=best):
            if label not in best or seconds < best[label][0]:
                best[label] = (seconds, size)

        for _ in range(args.repeats):
            for size in sizes:
                record(f"fixed {size}", *timed_run(lm, work, size))
            memo.path.unlink(missing_ok=True)
            record("auto, fresh memo (probe timed)", *timed_run(lm, work, "auto"))
            sizer = lm.sizer(work.request_type)
            key, bucket = sizer.memo_key(sizer.search.bucket), sizer.search.bucket
            record("auto, the previous run's memo", *timed_run(lm, work, "auto"))
            for poisoned in (8, AUTO_MAX_SIZE_CPU):
                memo.put(key, poisoned)
                record(f"auto, memo poisoned at {poisoned}", *timed_run(lm, work, "auto"))
            memo.path.unlink(missing_ok=True)
            spawn = multiprocessing.get_context("spawn")  # a forked child's OpenMP can hang
            stop = spawn.Event()
            hogs = [spawn.Process(target=_busy, args=(stop,)) for _ in range(2)]
            for hog in hogs:
                hog.start()
            timed_run(lm, work, "auto")  # measured while other work shares the cores
            stop.set()
            for hog in hogs:
                hog.join()
            under_load = memo.get(key)
            record(f"auto, memo written under load ({under_load})", *timed_run(lm, work, "auto"))
        top = min(s for label, (s, _) in best.items() if label.startswith("fixed"))
        n = len(work.requests)
        print(f"\n{work.name} (length bucket {bucket})")
        print(f"  {'configuration':<34}  {work.unit + '/s':>12}  {'× best fixed':>12}  ended at")
        for label, (seconds, size) in best.items():
            print(f"  {label:<34}  {n / seconds:>12.2f}  {top / seconds:>12.2f}  {size:>8}")


if __name__ == "__main__":
    main()
