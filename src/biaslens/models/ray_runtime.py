"""Starting or joining a Ray runtime, with clear errors (imported only when Ray is used)."""

from __future__ import annotations

import dataclasses
import os

from biaslens.errors import BiaslensError
from biaslens.models.base import LM, BackendConfig

OBJECT_STORE_ENV = "BIASLENS_RAY_OBJECT_STORE_MB"
"""Object store size (MB) of a local runtime biaslens starts (default 256: requests and
answers are small)."""


def import_ray():
    try:
        import ray
    except ImportError:
        raise BiaslensError(
            "--data-parallel and --parallel-cells need Ray: pip install 'biaslens[ray]'"
        ) from None
    return ray


def connect(address: str | None = None):
    """The Ray module, connected: to ``address`` (``auto`` or ``HOST:PORT``) when given, else
    to a runtime already started in this process, else to a new local one."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    options = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True}
    try:
        if address:
            ray.init(address=address, **options)
        else:
            megabytes = int(os.environ.get(OBJECT_STORE_ENV, "256"))
            ray.init(object_store_memory=megabytes * 1024**2, **options)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = address or "a local runtime"
        raise BiaslensError(f"cannot start or join Ray ({where}): {error}") from None
    return ray


def devices(ray, replicas: int) -> dict:
    """Resources for each of ``replicas`` workers: one GPU each where the cluster has enough,
    else an equal share of its CPUs."""
    resources = ray.cluster_resources()
    if resources.get("GPU", 0) >= replicas:
        return {"num_gpus": 1, "num_cpus": 1}
    cpus = max(1, int(resources.get("CPU", os.cpu_count() or 1)) // replicas)
    return {"num_cpus": cpus}


def worker_plan(ray, workers: int, config: BackendConfig) -> tuple[dict, int | None, dict]:
    """For ``workers`` Ray workers that each load a model: the resources of one (see
    :func:`devices`), the torch threads it may use (None on a GPU) and the backend settings it
    loads with (one process each: no nested replicas, no second Ray address)."""
    resources = devices(ray, workers)
    threads = None if "num_gpus" in resources else resources["num_cpus"]
    inner = dataclasses.replace(config, data_parallel=1, ray_address=None)
    return resources, threads, dataclasses.asdict(inner)


def load_in_worker(load, name: str, config: dict, threads: int | None) -> LM:
    """Inside a Ray worker: limit torch to the worker's CPU share, then ``load(name, config)``
    (``load`` is passed in, e.g. :func:`biaslens.models.registry.load_model`)."""
    if threads:
        os.environ["OMP_NUM_THREADS"] = str(threads)
        try:
            import torch

            torch.set_num_threads(threads)
        except ImportError:
            pass
    return load(name, BackendConfig(**config))
