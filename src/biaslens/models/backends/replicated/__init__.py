"""Data-parallel model replicas on Ray (``--data-parallel N``), around any backend: N Ray
actors each load the model on the chosen backend (:mod:`.replicas`; the Ray runtime they run on,
which LEI fine-tuning shares, is :mod:`biaslens.models.runtime.ray_runtime`)."""

from __future__ import annotations

from biaslens.models.options import BackendOption
from biaslens.models.registry import RegisteredBackend

DATA_PARALLEL = BackendOption(
    "data_parallel",
    default=1,
    type=int,
    minimum=1,
    record="set",
    help="Model replicas on a Ray runtime (one per GPU, or a CPU share); 1 runs in process.",
)
RAY_ADDRESS = BackendOption(
    "ray_address",
    default=None,
    help="Join a running Ray cluster (auto or HOST:PORT).",
)

BACKEND = RegisteredBackend(
    "replicated",
    "biaslens.models.backends.replicated.replicas:load_replicated",
    "model replicas on a Ray runtime, around the chosen backend (--data-parallel N)",
    options=(DATA_PARALLEL, RAY_ADDRESS),
    packages=("ray",),
    switch="data_parallel",
)
