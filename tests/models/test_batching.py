import pytest
import torch

from biaslens.errors import BiaslensError
from biaslens.models.runtime.batching import (
    START_TOKENS,
    WARM_UP_SIZE,
    BatchSizeMemo,
    BatchSizer,
    Warmth,
    length_bucket,
    start_size,
)


def test_results_come_back_in_input_order_and_batches_are_length_sorted():
    seen = []

    def fn(batch):
        seen.append([len(x) for x in batch])
        return [x.upper() for x in batch]

    items = ["aa", "b", "cccc", "ddd", "e"]
    sizer = BatchSizer(2)
    assert sizer.run(items, [len(x) for x in items], fn) == [x.upper() for x in items]
    assert seen == [[4, 3], [2, 1], [1]]


class FakeClock:
    """Time that advances only when a batch runs: ``tokens / rate(batch size)`` seconds, times
    a load factor per batch (``loads``, consumed in order; 1 when exhausted) that stands for
    other work sharing the cores."""

    def __init__(self, rates: dict[int, float], loads=()) -> None:
        self.now, self.rates, self.loads = 0.0, rates, iter(loads)

    def __call__(self) -> float:
        return self.now

    def work(self, batch: list) -> list:
        load = next(self.loads, 1.0)
        self.now += len(batch) / (self.rates.get(len(batch), 1.0) * load)
        return batch


CPU_SHAPE = {8: 100.0, 16: 150.0, 32: 180.0, 64: 170.0, 128: 120.0}
"""items/s by batch size: rises to 32, falls after (a CPU's usual shape)"""
KEY = "model|cpu|float32|token_distribution"
L = START_TOKENS // 8
"""Request length (tokens) at which a fresh search starts at 8; rates in tokens/s are L × the
items/s of the clock."""
BUCKET = f"|len{L}"


def recording(clock):
    seen = []

    def fn(batch):
        seen.append(len(batch))
        return clock.work(batch)

    return seen, fn


def test_auto_batch_size_doubles_while_throughput_rises_then_settles(tmp_path):
    clock = FakeClock(CPU_SHAPE)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    sizer = BatchSizer("auto", memo, KEY, clock)
    seen, fn = recording(clock)
    items = list(range(600))
    assert sizer.run(items, [L] * 600, fn) == items
    # a warm-up of 4 (untimed, small so that progress moves at once); 8 twice (nothing to
    # compare with yet); 16 and 32 each ran clearly faster than every size before on their
    # first batch: up at once; 64 is not clearly faster (measured twice), 128 clearly slower
    # than 32 (twice): settled at 32
    assert seen[:10] == [WARM_UP_SIZE, 8, 8, 16, 32, 64, 64, 128, 128, 32]
    assert set(seen[9:-1]) == {32} and sizer.settled and sizer.size == 32
    assert sizer.search.measures[16] == pytest.approx([150.0 * L])
    assert memo.get(KEY + BUCKET) == 32  # remembered per length bucket
    assert not sizer.search.revalidated
    # other request types and other lengths start afresh
    other = BatchSizer("auto", memo, "model|cpu|float32|choice_logprobs", clock)
    other.run(list(range(10)), [L] * 10, clock.work)
    assert other.search.remembered is None and other.search.first_size == 8
    longer = BatchSizer("auto", memo, KEY, clock)
    longer.run(list(range(10)), [40] * 10, clock.work)
    assert longer.search.remembered is None and longer.search.bucket == 32
    assert longer.search.first_size == 64  # 2048 tokens / 40: the nearest power of two


def test_a_fresh_search_starts_near_a_token_budget():
    assert START_TOKENS == 2048
    assert [start_size([n], 1024) for n in (1, 43, 64, 100, 256, 5000)] == [1024, 64, 32, 16, 8, 1]
    assert start_size([1], 256) == 256 and start_size([], 256) == 256


def test_a_remembered_size_is_revalidated_against_its_neighbours(tmp_path):
    clock = FakeClock(CPU_SHAPE)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    memo.put(KEY + BUCKET, 32)
    sizer = BatchSizer("auto", memo, KEY, clock)
    seen, fn = recording(clock)
    sizer.run(list(range(1000)), [L] * 1000, fn)
    # a warm-up of 4, then 32 (2 measures), goes up to 64 and 128 (slower), then down to 16
    assert seen[:11] == [WARM_UP_SIZE, 32, 32, 64, 64, 128, 128, 16, 16, 32, 32]
    assert sizer.search.revalidated and sizer.size == 32
    assert set(sizer.rates) == {16, 32, 64, 128}


@pytest.mark.parametrize("poisoned", [8, 16, 128, 256])
def test_a_poisoned_memo_is_corrected_by_the_next_run(tmp_path, poisoned):
    # a size remembered from a run that shared the cores (or from another machine)
    clock = FakeClock(CPU_SHAPE)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    memo.put(KEY + BUCKET, poisoned)
    sizer = BatchSizer("auto", memo, KEY, clock, max_size=256)
    seen, fn = recording(clock)
    items = list(range(3000))
    assert sizer.run(items, [L] * 3000, fn) == items
    assert seen[:2] == [min(poisoned, WARM_UP_SIZE), poisoned]  # after the warm-up: the memo
    assert sizer.search.revalidated and poisoned in sizer.rates and 32 in sizer.rates
    assert sizer.settled and sizer.size == 32
    assert memo.get(KEY + BUCKET) == 32


def test_a_measure_slowed_by_other_work_is_measured_again():
    # the second batch at 16 runs while other work halves the rate: one more measure is taken
    clock = FakeClock(CPU_SHAPE, loads=[1, 1, 1, 0.5, 1, 1, 1, 1, 1, 1, 1])
    sizer = BatchSizer("auto", clock=clock)
    seen, fn = recording(clock)
    sizer.run(list(range(1000)), [L] * 1000, fn)
    assert seen[:7] == [WARM_UP_SIZE, 8, 8, 16, 16, 16, 32]
    assert sizer.search.measures[16] == pytest.approx([75.0 * L, 150.0 * L, 150.0 * L])
    assert sizer.rates[16] == pytest.approx(150.0 * L) and sizer.size == 32
    assert sizer.search.stable


def test_a_size_settled_under_unsteady_load_is_not_remembered(tmp_path):
    loads = [0.7**k for k in range(60)]  # other work takes ever more of the cores
    clock = FakeClock(CPU_SHAPE, loads=loads)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    sizer = BatchSizer("auto", memo, KEY, clock)
    sizer.run(list(range(2000)), [L] * 2000, clock.work)
    assert sizer.settled and not sizer.search.stable
    assert memo.get(KEY + BUCKET) is None


def test_a_gain_within_noise_keeps_the_smaller_size():
    clock = FakeClock({8: 100.0, 16: 90.0, 32: 103.0, 64: 60.0})
    sizer = BatchSizer("auto", clock=clock)
    sizer.run(list(range(300)), [L] * 300, clock.work)
    # 16 is slower but not clearly: probing goes on; 64 is clearly slower and ends it;
    # 32 is only 3% faster than 8, so the smaller one is kept
    assert sizer.settled and sizer.size == 8


def test_probing_uses_token_counts_not_item_counts():
    # long items first: a batch's throughput is its tokens per second
    clock = FakeClock({})
    sizer = BatchSizer("auto", clock=clock)
    lengths = [10 * L] * 16 + [L] * 6000

    def fn(batch):
        clock.now += sum(lengths[i] for i in batch) / 100.0  # 100 tokens/s at any size
        return batch

    sizer.run(list(range(len(lengths))), lengths, fn)
    assert list(sizer.rates.values()) == pytest.approx([100.0] * len(sizer.rates))  # per token
    assert sizer.settled and sizer.size == 8  # no size is faster: the smallest


def test_length_buckets():
    assert [length_bucket(x) for x in ([1], [3], [10, 14], [100] * 5, [])] == [1, 4, 16, 128, 1]


def test_auto_batch_size_halves_on_out_of_memory():
    calls = []

    def fn(batch):
        calls.append(len(batch))
        if len(batch) > 40:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate")
        return [x * 2 for x in batch]

    clock = FakeClock({8: 1.0, 16: 2.0, 32: 4.0, 64: 8.0})  # bigger is always faster

    def timed(batch):
        out = fn(batch)
        clock.work(batch)
        return out

    sizer = BatchSizer("auto", clock=clock)
    ticks = []
    out = sizer.run(list(range(200)), [L] * 200, timed, ticks.append)
    assert out == [x * 2 for x in range(200)]
    # warm-up, 8, 8, 16, 32 (each clearly faster), 64 fails -> 32 and settled for the rest
    assert calls[:7] == [WARM_UP_SIZE, 8, 8, 16, 32, 64, 32]
    assert sizer.size == 32 and sizer.settled
    assert sum(ticks) == 200


def test_a_damaged_memo_is_an_empty_one(tmp_path):
    path = tmp_path / "sizes.json"
    path.write_text("{not json")
    memo = BatchSizeMemo(path)
    assert memo.get("k") is None
    memo.put("k", 16)
    assert BatchSizeMemo(path).get("k") == 16


def test_fixed_batch_size_does_not_swallow_errors():
    def fn(batch):
        raise torch.OutOfMemoryError("out of memory")

    with pytest.raises(torch.OutOfMemoryError):
        BatchSizer(4).run([1, 2], [1, 1], fn)


@pytest.mark.parametrize("bad", [0, -3, "many", True])
def test_invalid_batch_size(bad):
    from biaslens.models import BackendConfig

    with pytest.raises(BiaslensError, match="--batch-size"):
        BackendConfig(batch_size=bad)


def test_a_model_run_starts_at_a_poisoned_memo_and_revalidates_it(tiny_models, tmp_path):
    from biaslens.models import BackendConfig, load_model
    from biaslens.models.requests import RequestType, TokenDistributionRequest

    requests = [
        TokenDistributionRequest(f"The worker number {i} said that", (" she", " he"))
        for i in range(300)
    ]
    first = load_model(str(tiny_models["llama"]), BackendConfig(device="cpu"))
    first.token_distribution(requests)  # the same requests: sizes are kept per length bucket
    sizer = first.sizer(RequestType.TOKEN_DISTRIBUTION)
    key = sizer.memo_key(sizer.search.bucket)
    sizer.memo.put(key, 2)  # a size far too small, as if measured while the cores were busy

    again = load_model(str(tiny_models["llama"]), BackendConfig(device="cpu"))
    again.token_distribution(requests)
    search = again.sizer(RequestType.TOKEN_DISTRIBUTION).search
    assert search.remembered == 2 and search.revalidated
    assert {2, 4} <= set(search.rates)  # the remembered size and its neighbour were measured


def test_only_a_models_first_batch_is_an_untimed_warm_up(tmp_path):
    """The warm-up pays one-time costs of the model, not of a search: once the model has run a
    batch (any request type or length: one Warmth per model, shared by its sizers), a new
    search times its first full batch. A model of its own warms up again."""
    clock = FakeClock(CPU_SHAPE)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    warmth = Warmth()
    first = BatchSizer("auto", memo, KEY, clock, warmth=warmth)
    seen, fn = recording(clock)
    first.run(list(range(20)), [L] * 20, fn)
    assert seen == [WARM_UP_SIZE, 8, 8] and warmth.done
    assert first.search.measures == {8: pytest.approx([100.0 * L] * 2)}  # warm-up untimed
    seen.clear()
    other = BatchSizer("auto", memo, "model|cpu|float32|choice_logprobs", clock, warmth=warmth)
    other.run(list(range(16)), [L] * 16, fn)
    assert seen == [8, 8]  # no warm-up: both batches timed
    assert other.search.measures == {8: pytest.approx([100.0 * L] * 2)}
    seen.clear()
    BatchSizer("auto", memo, "other model|cpu", clock).run(list(range(12)), [L] * 12, fn)
    assert seen == [WARM_UP_SIZE, 8]


def test_work_that_ends_before_settling_leaves_its_best_size_as_a_starting_point(tmp_path):
    clock = FakeClock(CPU_SHAPE)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    sizer = BatchSizer("auto", memo, KEY, clock)
    seen, fn = recording(clock)
    sizer.run(list(range(52)), [L] * 52, fn)  # warm-up, 8, 8, 16, 16 of 32 (cut short)
    assert seen == [WARM_UP_SIZE, 8, 8, 16, 16] and not sizer.settled
    assert memo.get_entry(KEY + BUCKET) == (16, None)  # measured once, faster than 8; no rate
    following = BatchSizer("auto", memo, KEY, clock)
    following.run(list(range(1000)), [L] * 1000, clock.work)
    assert following.search.remembered == 16 and following.size == 32


def test_a_size_that_runs_at_its_remembered_rate_is_kept_without_probing(tmp_path):
    clock = FakeClock(CPU_SHAPE)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    memo.put(KEY + BUCKET, 32, 175.0 * L)  # within 10% of the rate it runs at now
    sizer = BatchSizer("auto", memo, KEY, clock)
    seen, fn = recording(clock)
    sizer.run(list(range(1000)), [L] * 1000, fn)
    assert seen[0] == WARM_UP_SIZE
    assert set(seen[1:-1]) == {32} and sizer.settled and sizer.search.confirmed  # last: the rest
    assert not sizer.search.revalidated
    assert memo.get_entry(KEY + BUCKET) == (32, pytest.approx(180.0 * L))  # this run's rate


@pytest.mark.parametrize("poisoned", [8, 16, 128])
def test_a_memo_written_under_load_is_not_confirmed_by_a_quiet_run(tmp_path, poisoned):
    # measured while other work took half the cores: the remembered rate is half today's
    clock = FakeClock(CPU_SHAPE)
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    memo.put(KEY + BUCKET, poisoned, CPU_SHAPE[poisoned] * 0.5 * L)
    sizer = BatchSizer("auto", memo, KEY, clock, max_size=256)
    seen, fn = recording(clock)
    sizer.run(list(range(3000)), [L] * 3000, fn)
    assert seen[:2] == [min(poisoned, WARM_UP_SIZE), poisoned] and not sizer.search.confirmed
    assert sizer.search.revalidated and sizer.size == 32
    assert memo.get_entry(KEY + BUCKET) == (32, pytest.approx(180.0 * L))


def test_memo_entries_of_the_older_format_are_sizes_without_a_rate(tmp_path):
    path = tmp_path / "sizes.json"
    path.write_text('{"a": 16, "b": {"size": 8, "rate": 12.5}, "c": "x", "d": {"size": 0}}')
    memo = BatchSizeMemo(path)
    assert memo.get_entry("a") == (16, None) and memo.get_entry("b") == (8, 12.5)
    assert memo.get("c") is None and memo.get("d") is None
