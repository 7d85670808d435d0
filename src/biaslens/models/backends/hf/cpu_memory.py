"""Keep freed activation memory in the process while a model runs on a CPU.

glibc's malloc serves blocks above a threshold by ``mmap`` and gives the top of its heap back to
the system when more than another threshold of it is free; it adjusts both as it goes. A
forward pass frees its activations at the end of a batch and allocates them again on the next,
and under glibc's own adjustment much of that memory still goes back to the system and is
faulted in again, page by page, on the next batch. Choice scoring of 128 questions per batch
(SmolLM2 on a 2-core AMD EPYC, about 5,400 tokens in one sequence) took 6.9–7.3 s a batch under
glibc's defaults and 6.2–6.7 s with :func:`keep_freed_memory`.

:func:`keep_freed_memory` fixes the ``mmap`` threshold at glibc's ceiling (32 MiB on 64-bit
systems) and stops trimming the heap. Both are needed: setting either one turns off glibc's
adjustment of the other, and each alone was slower than the defaults (9.4 s and 7.7 s a batch
on the same work). The process then keeps the memory its largest batch needed, which it would
take again at the next batch anyway, instead of returning it between batches. Other allocators
(musl, macOS, Windows) are left as they are, and so is malloc when ``BIASLENS_KEEP_CPU_MEMORY=0``
(a program that embeds biaslens and wants memory back between batches).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""``mallopt`` parameters, from glibc's ``malloc.h``."""
MMAP_THRESHOLD = 32 * 2**20
"""Blocks below this come from the heap: glibc's ceiling of its own adjusted threshold
(``DEFAULT_MMAP_THRESHOLD_MAX`` on 64-bit systems); larger ones are mapped apart."""
NEVER_TRIM = 2**31 - 1
"""The largest trim threshold ``mallopt`` takes (a C int): 2 GiB of free heap before trimming."""

OPT_OUT_ENV = "BIASLENS_KEEP_CPU_MEMORY"
"""Set to 0 to leave malloc's settings alone."""

_applied: bool | None = None


def glibc():
    """The process's C library if it is glibc (it has ``gnu_get_libc_version``), else None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only)
    except (OSError, AttributeError):
        return None
    return libc


def keep_freed_memory(libc=None) -> bool:
    """Once per process: allocations below :data:`MMAP_THRESHOLD` from the heap, and the heap
    never trimmed (module doc), unless ``BIASLENS_KEEP_CPU_MEMORY=0``. Returns whether glibc
    took both settings; ``libc`` is injectable for tests (anything with
    ``mallopt(parameter, value) -> int``)."""
    global _applied
    if os.environ.get(OPT_OUT_ENV, "1").strip() == "0":
        return False
    if libc is not None:
        return _set(libc)
    if _applied is None:
        found = glibc()
        _applied = found is not None and _set(found)
    return _applied


def _set(libc) -> bool:
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, NEVER_TRIM)
    )
