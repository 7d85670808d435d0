"""Helpers the benchmarks share: the machine, its measured matmul peak, timing, the result
table, and lm-evaluation-harness (the peer) on the same requests.

Every scoring benchmark prints the CPU/GPU model and the fp32 matmul FLOP/s measured in the
same run, then one row per approach: what it does, its rate, the ratio to biaslens and the
largest difference of its scores from biaslens's (agreement).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402


def machine() -> str:
    """CPU model, threads and matrix-unit flags (AVX2 / AVX-512 / BF16 / AMX: figures from
    CPUs with different flags are not comparable), the GPU if one is used, torch version."""
    from biaslens.models.backends.hf.loading import cpu_matrix_flags
    from biaslens.models.backends.hf.runtime import device_description

    flags = "/".join(cpu_matrix_flags()) or "flags unknown"
    parts = [
        f"{device_description(torch.device('cpu'))} [{flags}]",
        f"torch {torch.__version__}",
    ]
    if torch.cuda.is_available():
        parts.insert(0, torch.cuda.get_device_name())
    return ", ".join(parts) + f", {platform.python_implementation()} {platform.python_version()}"


def fresh_batch_memo() -> None:
    """Make ``--batch-size auto`` start unmeasured (its throughput probe is then timed too):
    a memo file of this process's own, removed at exit."""
    import atexit

    from biaslens.models.runtime import batch_memo

    batch_memo.MEMO_FILE = f"bench-batch-sizes-{os.getpid()}.json"
    atexit.register(lambda: batch_memo.BatchSizeMemo().path.unlink(missing_ok=True))


def forget_batch_sizes(lm) -> None:
    """Make the next ``--batch-size auto`` call of ``lm`` start unmeasured again: its sizers
    and this process's size memo (:func:`fresh_batch_memo`) cleared."""
    from biaslens.models.runtime.batch_memo import BatchSizeMemo

    BatchSizeMemo().path.unlink(missing_ok=True)
    lm.sizers.clear()


def set_batch_size(lm, batch_size: int | str) -> None:
    """Give a loaded hf backend another batch size (``"auto"`` or N), its sizers cleared so
    that the next call starts from it."""
    lm.config = replace(lm.config, batch_size=batch_size)
    lm.sizers.clear()


def start(device: str = "cpu") -> float:
    """What every benchmark does first: quiet transformers and warnings, an unmeasured
    ``--batch-size auto`` memo, and the machine and its measured fp32 matmul peak printed
    (returned in FLOP/s)."""
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    fresh_batch_memo()
    print(f"machine: {machine()}")
    peak = matmul_peak(device=device)
    print(f"fp32 matmul peak: {peak / 1e9:.1f} GFLOP/s")
    return peak


def sync(device: torch.device | str = "cpu") -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(
    dtype: torch.dtype = torch.float32, device: str = "cpu", n: int = 2048, repeats: int = 5
) -> float:
    """FLOP/s of a dense n×n matmul in ``dtype`` (best of three timings)."""
    a = torch.randn(n, n, dtype=dtype, device=device)
    b = torch.randn(n, n, dtype=dtype, device=device)
    a @ b
    best = float("inf")
    for _ in range(3):
        sync(device)
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 * repeats / best


def timed(fn: Callable[[], object], device: str | torch.device = "cpu") -> tuple[float, object]:
    """(seconds, result) of one call."""
    sync(device)
    start = time.perf_counter()
    result = fn()
    sync(device)
    return time.perf_counter() - start, result


def time_it(fn: Callable[[], object]) -> float:
    """Seconds of one call."""
    return timed(fn)[0]


def model_path(name: str, folder: str) -> tuple[str, bool]:
    """A benchmark model name as a loadable path, and whether it is a tiny model: ``tiny-bert``
    and ``tiny-llama`` are built into ``folder``; ``smollm2`` is the default model; anything
    else is passed through as a model name or folder."""
    from pathlib import Path

    from biaslens.testing.tiny_models import build

    tiny = {"tiny-bert": "bert-mlm", "tiny-llama": "llama"}
    if name in tiny:
        return str(build(tiny[name], Path(folder) / tiny[name])), True
    return ("default" if name == "smollm2" else name), False


def flat(rows: Sequence[Sequence[float]]) -> list[float]:
    """Per-request score lists as one list (for :func:`max_abs_difference`)."""
    return [x for row in rows for x in row]


def max_abs_difference(a: Sequence[float], b: Sequence[float]) -> float:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x == x and y == y]  # skip NaN
    return max((abs(x - y) for x, y in pairs), default=float("nan"))


@dataclass
class Row:
    approach: str
    items: int
    seconds: float
    agreement: float | None = None  # max |Δ| of the scores against biaslens's

    @property
    def rate(self) -> float:
        return self.items / self.seconds


def print_table(title: str, unit: str, rows: list[Row], reference: int = 0) -> None:
    """Rows with their rate and the ratio of the ``reference`` row (biaslens) to each."""
    base = rows[reference].rate
    width = max(len(r.approach) for r in rows)
    print(f"\n{title}")
    print(f"  {'approach':<{width}}  {unit + '/s':>10}  {'biaslens ×':>10}  {'max |Δ|':>9}")
    for row in rows:
        agreement = "—" if row.agreement is None else f"{row.agreement:.1e}"
        print(
            f"  {row.approach:<{width}}  {row.rate:>10.2f}  {base / row.rate:>10.2f}  "
            f"{agreement:>9}"
        )


class ForwardCounter:
    """Tokens run through the model's body (padding included) and rows through its LM head,
    over every forward pass of ``model`` (whole-model calls and biaslens's packed-tree calls of
    the base model and head alike)."""

    def __init__(self, model) -> None:
        self.tokens = self.rows = 0
        model.base_model.register_forward_pre_hook(self._count_tokens, with_kwargs=True)
        head = model.get_output_embeddings()
        if head is not None:
            head.register_forward_pre_hook(self._count_rows)

    def _count_tokens(self, module, args, kwargs) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None:
            self.tokens += ids.numel()

    def _count_rows(self, module, args) -> None:
        self.rows += args[0].shape[:-1].numel()

    def reset(self) -> None:
        self.tokens = self.rows = 0


def flop_rates(model) -> tuple[int, int]:
    """(FLOPs per token run, FLOPs per LM-head row): 2·non-embedding parameters, 2·hidden·vocab."""
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    body = sum(p.numel() for p in model.parameters()) - embed.numel()
    if head is not None and head.weight.data_ptr() != embed.data_ptr():
        body -= head.weight.numel()
    return 2 * body, 2 * embed.numel()


def trie_tokens(sequences) -> int:
    """Tokens a forward pass must compute to read every sequence when shared prefixes run once:
    the nodes of the sequences' prefix tree (the useful work of prefix-shared scoring)."""
    root: dict = {}
    nodes = 0
    for sequence in sequences:
        node = root
        for token in sequence:
            if token not in node:
                node[token] = {}
                nodes += 1
            node = node[token]
    return nodes


def print_share(label: str, flops: float, seconds: float, peak: float) -> None:
    """One line: ``label``'s FLOP/s and its share of the fp32 matmul peak measured in the run."""
    print(f"  {label}: {flops / seconds / 1e9:.1f} GFLOP/s = {flops / seconds / peak:.0%} of "
          f"the fp32 matmul peak ({peak / 1e9:.0f} GFLOP/s, this run)")  # fmt: skip


@dataclass
class Repeated:
    """One approach timed in several rounds: each run's seconds, the fp32 matmul peak measured
    just before it (a neighbour on a shared machine slows both alike), the FLOPs of its work,
    and its first result."""

    seconds: list[float]
    peaks: list[float]
    flops: float = 0.0
    result: object = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def shares(self) -> list[float]:
        return [self.flops / s / p for s, p in zip(self.seconds, self.peaks, strict=True)]


def alternate(
    approaches: dict[str, Callable[[], object]], repeats: int, device: str = "cpu"
) -> dict[str, Repeated]:
    """Each approach run ``repeats`` times in rounds (A B A B …), so that a slow spell of the
    machine falls on all of them alike; before each run the fp32 matmul peak is measured again.
    The caller sets each one's ``flops``."""
    timings = {name: Repeated([], []) for name in approaches}
    for _ in range(repeats):
        for name, run in approaches.items():
            peak = matmul_peak(device=device, repeats=3)
            seconds, result = timed(run, device)
            timing = timings[name]
            timing.seconds.append(seconds)
            timing.peaks.append(peak)
            if timing.result is None:
                timing.result = result
    return timings


def print_repeated_share(label: str, timing: Repeated) -> None:
    """One line: ``label``'s median share of the fp32 matmul peak over its runs (each against
    the peak measured just before it), with the range."""
    shares, rates = timing.shares(), [timing.flops / s for s in timing.seconds]
    range_ = f" ({min(shares):.0%}–{max(shares):.0%})" if len(shares) > 1 else ""
    print(f"  {label}: {statistics.median(rates) / 1e9:.1f} GFLOP/s, "
          f"{statistics.median(shares):.0%}{range_} of the fp32 matmul peak, median of "
          f"{len(shares)} run{'s' * (len(shares) > 1)}, each against the peak measured just "
          f"before it ({min(timing.peaks) / 1e9:.0f}–{max(timing.peaks) / 1e9:.0f} "
          "GFLOP/s)")  # fmt: skip


# ---------------------------------------------------------------------- lm-evaluation-harness
def lm_eval_available() -> bool:
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        print("lm-evaluation-harness is not installed (pip install 'biaslens[bench]'): skipped")
        return False
    return True


def lm_eval_model(path: str, batch_size: int | str, device: str = "cpu"):
    """lm-eval's ``HFLM`` on the same model folder, fp32, the tokenizer's own special tokens
    (as biaslens's default)."""
    import logging

    from lm_eval.models.huggingface import HFLM

    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    return HFLM(pretrained=path, device=device, batch_size=batch_size, dtype="float32")


def lm_eval_loglikelihood(model, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """log p(continuation | context) per pair through ``HFLM.loglikelihood``."""
    from lm_eval.api.instance import Instance

    requests = [
        Instance(request_type="loglikelihood", doc={}, arguments=(context, continuation), idx=i)
        for i, (context, continuation) in enumerate(pairs)
    ]
    return [logprob for logprob, _ in model.loglikelihood(requests, disable_tqdm=True)]


def model_folder(name: str) -> str:
    """A registered model name (``default``) or path as a folder lm-eval can load."""
    from biaslens.models.checkpoints.registered import registered_model

    entry = registered_model(name)
    return str(entry.locate()) if entry is not None else name


SERVED_KEY_VARIABLE = "BENCH_VLLM_KEY"
"""The environment variable the served benchmarks' client reads its key from."""


def workload_arguments(description: str, mgc: int, lei: int, mgc_help: str, lei_help: str):
    """The served benchmarks' command line: how many MGC prompts and LEI questions."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mgc", type=int, default=mgc, help=mgc_help)
    parser.add_argument("--lei", type=int, default=lei, help=lei_help)
    return parser.parse_args()


@contextmanager
def vllm_server():
    """``vllm serve`` of the converted SmolLM2 on a free local port (the served tests' own
    server, :class:`tests.models.test_vllm.Server`), its key in :data:`SERVED_KEY_VARIABLE`;
    yields the server and stops it afterwards."""
    import os
    import sys
    import warnings

    from biaslens.models.checkpoints.packaged import converted_smollm2

    warnings.filterwarnings("ignore")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from models.test_vllm import API_KEY, Server

    server = Server(converted_smollm2(verbose=False)).start()
    os.environ[SERVED_KEY_VARIABLE] = API_KEY
    try:
        yield server
    finally:
        server.kill()


def served_model(server, concurrency: int, **options):
    """The served SmolLM2 through the openai backend at ``concurrency`` (``options``: more
    backend options, e.g. ``chat=True``)."""
    from models.test_vllm import NAME

    from biaslens.models import BackendConfig, load_model

    config = BackendConfig(
        backend="openai", base_url=server.url, api_key_env=SERVED_KEY_VARIABLE,
        concurrency=concurrency, **options,
    )  # fmt: skip
    return load_model(NAME, config)
