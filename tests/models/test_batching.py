import pytest
import torch

from biaslens.errors import BiaslensError
from biaslens.models.batching import AUTO_FIRST_SIZE, BatchSizeMemo, BatchSizer


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
    """Time that advances only when a batch runs: ``tokens / rate(batch size)`` seconds."""

    def __init__(self, rates: dict[int, float]) -> None:
        self.now, self.rates = 0.0, rates

    def __call__(self) -> float:
        return self.now

    def work(self, batch: list) -> list:
        self.now += len(batch) / self.rates.get(len(batch), 1.0)
        return batch


def test_auto_batch_size_doubles_while_throughput_rises_then_settles(tmp_path):
    # tokens/s by batch size: rises to 32, falls after (a CPU's usual shape)
    clock = FakeClock({8: 100.0, 16: 150.0, 32: 180.0, 64: 170.0, 128: 120.0})
    memo = BatchSizeMemo(tmp_path / "sizes.json")
    sizer = BatchSizer("auto", memo, "model|cpu|float32|token_distribution", clock)
    seen = []

    def fn(batch):
        seen.append(len(batch))
        return clock.work(batch)

    items = list(range(600))
    assert sizer.run(items, [1] * 600, fn) == items
    # 8 (warm-up, untimed), 8, 16, 32, 64, 128 (clearly slower than 32): settle at 32
    assert seen[:7] == [8, 8, 16, 32, 64, 128, 32]
    assert set(seen[6:-1]) == {32} and sizer.settled and sizer.size == 32
    assert memo.get("model|cpu|float32|token_distribution") == 32
    # a later run of the same model on the same device starts at 32 without probing
    again = BatchSizer("auto", memo, "model|cpu|float32|token_distribution", clock)
    assert again.settled and again.size == 32
    other = BatchSizer("auto", memo, "model|cpu|float32|choice_logprobs", clock)
    assert not other.settled and other.size == AUTO_FIRST_SIZE


def test_a_gain_within_noise_keeps_the_smaller_size():
    clock = FakeClock({8: 100.0, 16: 80.0, 32: 103.0, 64: 60.0})
    sizer = BatchSizer("auto", clock=clock)
    sizer.run(list(range(300)), [1] * 300, clock.work)
    # 16 is slower but not clearly: probing goes on; 64 is clearly slower and ends it;
    # 32 is only 3% faster than 8, so the smaller one is kept
    assert sizer.settled and sizer.size == 8


def test_probing_uses_token_counts_not_item_counts():
    # long items first: a batch's throughput is its tokens per second
    clock = FakeClock({})
    sizer = BatchSizer("auto", clock=clock)
    lengths = [10] * 16 + [1] * 3000

    def fn(batch):
        clock.now += sum(lengths[i] for i in batch) / 100.0  # 100 tokens/s at any size
        return batch

    sizer.run(list(range(len(lengths))), lengths, fn)
    assert list(sizer.rates.values()) == pytest.approx([100.0] * len(sizer.rates))  # per token
    assert sizer.size == 8  # no size is faster: the smallest


def test_auto_batch_size_halves_on_out_of_memory():
    calls = []

    def fn(batch):
        calls.append(len(batch))
        if len(batch) > 40:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate")
        return [x * 2 for x in batch]

    clock = FakeClock({})
    clock.rates = {8: 1.0, 16: 2.0, 32: 4.0, 64: 8.0}  # bigger is always faster

    def timed(batch):
        out = fn(batch)
        clock.work(batch)
        return out

    sizer = BatchSizer("auto", clock=clock)
    ticks = []
    out = sizer.run(list(range(200)), [1] * 200, timed, ticks.append)
    assert out == [x * 2 for x in range(200)]
    # 8 (warm-up), 8, 16, 32, 64 fails -> 32 and settled for the rest
    assert calls[:6] == [8, 8, 16, 32, 64, 32]
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


@pytest.mark.parametrize("bad", [0, -3, "many"])
def test_invalid_batch_size(bad):
    with pytest.raises(BiaslensError, match="batch size"):
        BatchSizer(bad)
