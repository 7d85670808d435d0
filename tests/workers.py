"""How many cores a test process may use (imported before torch: nothing heavy here)."""

from __future__ import annotations

import os


def worker_count() -> int:
    """How many pytest-xdist workers run the suite (1 without xdist)."""
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def cores_per_worker() -> int:
    """This test process's share of the machine's cores: all of them, or under pytest-xdist
    (the test command runs one worker per core) an equal share, so that workers' torch and
    BLAS threads do not outnumber the cores (oversubscribed, each runs several times slower)."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux: the cores this process may use
    cores = len(affinity(0)) if affinity else os.cpu_count() or 1
    return max(1, cores // worker_count())
