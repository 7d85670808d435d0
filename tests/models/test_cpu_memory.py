"""Keeping freed activation memory on a CPU (:mod:`biaslens.models.backends.hf.cpu_memory`):
the glibc settings it asks for, read against ``malloc.h``, through an injected C library (the
real one is process-wide and differs between machines)."""

from __future__ import annotations

from biaslens.models.backends.hf.cpu_memory import keep_freed_memory


class FakeLibc:
    """Records ``mallopt`` calls and answers ``answer`` (glibc: 1 taken, 0 refused)."""

    def __init__(self, answer: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def mallopt(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return self.answer


def test_it_fixes_the_mmap_threshold_at_glibcs_ceiling_and_stops_trimming():
    """malloc.h: M_TRIM_THRESHOLD is -1, M_MMAP_THRESHOLD -3; glibc's ceiling of its adjusted
    mmap threshold on 64-bit systems is 4 * 1024 * 1024 * sizeof(long) = 32 MiB; the trim
    threshold is a C int, at most 2**31 - 1."""
    libc = FakeLibc()
    assert keep_freed_memory(libc) is True
    assert libc.calls == [(-3, 4 * 1024 * 1024 * 8), (-1, 2**31 - 1)]


def test_a_refused_setting_is_reported_and_the_second_is_not_asked():
    libc = FakeLibc(answer=0)
    assert keep_freed_memory(libc) is False
    assert libc.calls == [(-3, 32 * 2**20)]


def test_biaslens_keep_cpu_memory_0_leaves_malloc_alone(monkeypatch):
    """A program that embeds biaslens can keep malloc's own settings: nothing is asked."""
    monkeypatch.setenv("BIASLENS_KEEP_CPU_MEMORY", "0")
    libc = FakeLibc()
    assert keep_freed_memory(libc) is False
    assert libc.calls == []


def test_on_glibc_a_batchs_activation_comes_from_the_heap_and_stays_there():
    """The real effect, where the C library is glibc (Linux CI): after the settings, a 20 MB
    tensor is served from the heap (no new mapping while it lives), and freeing it does not
    shrink the heap, so the next batch reuses that memory instead of faulting it in again."""
    import ctypes

    import pytest
    import torch

    from biaslens.models.backends.hf.cpu_memory import glibc

    libc = glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("the C library is not glibc ≥ 2.33")

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost")]  # fmt: skip

    libc.mallinfo2.restype = Mallinfo2
    assert keep_freed_memory() is True
    size = 20 * 2**20
    before = libc.mallinfo2()
    activation = torch.ones(size // 4)
    during = libc.mallinfo2()
    assert during.hblkhd - before.hblkhd < size  # not a mapping of its own
    del activation
    after = libc.mallinfo2()
    assert after.arena >= during.arena  # the heap kept the freed block
    assert after.fordblks >= size
