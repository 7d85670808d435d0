"""Benchmark: the app's detector sweep (one batched call over 24 dates) vs one call per date.

The specification detector scores a ``[MASK]`` sentence under ``In DATE, …`` for 24 dates.
biaslens sends the 24 inputs to the backend at once (length-sorted batches, one forward pass per
batch); the naive baseline asks for one date at a time, as a page that fetched each point of the
plot separately would. Also times one CID playground call (both directions in one batch).
Prints seconds per sweep and the ratio, on the default model (or ``--model``).

    python benchmarks/bench_app.py --repeats 3
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from biaslens.app import tools  # noqa: E402
from biaslens.methods.sib.data.mgc import inject_date  # noqa: E402
from biaslens.models import BackendConfig, load_model  # noqa: E402

SENTENCE = "The nurse said that [MASK] was tired."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    lm = load_model(args.model, BackendConfig(device="cpu"))
    tools.detect(lm, SENTENCE)  # warm-up
    start = time.perf_counter()
    for _ in range(args.repeats):
        batched = tools.detect(lm, SENTENCE)
    fast = (time.perf_counter() - start) / args.repeats
    start = time.perf_counter()
    for _ in range(args.repeats):
        rows = [
            tools.pronoun_masses(lm, [inject_date(SENTENCE, d)]).iloc[0]
            for d in tools.DETECTOR_DATES
        ]
    naive = (time.perf_counter() - start) / args.repeats
    same = max(
        abs(a["p_female"] - b["p_female"]) for a, b in zip(batched["rows"], rows, strict=True)
    )
    start = time.perf_counter()
    tools.cid_pair(
        lm, "John failed the interview because he", "Ahmed failed the interview because he", 5.0
    )
    cid = time.perf_counter() - start
    print(
        f"{lm.identity.name}: detector sweep of {len(tools.DETECTOR_DATES)} dates "
        f"batched {fast:.2f} s, one call per date {naive:.2f} s, ratio {naive / fast:.1f}x "
        f"(max |Δp_female| {same:.1e}); CID playground call {cid:.2f} s"
    )


if __name__ == "__main__":
    main()
