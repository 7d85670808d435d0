"""Data-parallel model replicas on Ray (``--data-parallel N``), around any backend: N Ray
actors each load the model on the chosen backend (:mod:`.replicas`; the Ray runtime they run on,
which LEI fine-tuning shares, is :mod:`biaslens.models.runtime.ray_runtime`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from biaslens.models.options import OptionGroup, OptionRules
from biaslens.models.registry import RegisteredBackend


class ReplicaOptions(OptionGroup):
    """Options of every backend, through this wrapper: how many replicas, on which cluster."""

    data_parallel: Annotated[int, OptionRules(minimum=1, record="set")] = Field(
        1,
        description="Model replicas on a Ray runtime (one per GPU, or a CPU share); 1 runs in "
        "process.",
    )
    ray_address: str | None = Field(
        None, description="Join a running Ray cluster (auto or HOST:PORT)."
    )


BACKEND = RegisteredBackend(
    "replicated",
    "biaslens.models.backends.replicated.replicas:load_replicated",
    "model replicas on a Ray runtime, around the chosen backend (--data-parallel N)",
    options=ReplicaOptions,
    packages=("ray",),
    switch="data_parallel",
)
