"""Starting or joining a Ray runtime, and placing model replicas on it, with clear errors
(imported only when Ray is used).

* A local runtime biaslens starts listens on the loopback interface only.
* A cluster named by ``--ray-address`` (or ``$RAY_ADDRESS``) is first joined by a short-lived
  probe process, bounded by ``$BIASLENS_RAY_CONNECT_TIMEOUT`` seconds: Ray itself retries an
  unreachable address for minutes and may end the process that asked.
* Replicas are admitted before any starts (:func:`admit`): one CPU each at least, one GPU each
  when the model is to run on GPUs, and memory for their weights; replicas the cluster cannot
  place within ``$BIASLENS_RAY_PLACEMENT_TIMEOUT`` seconds are a one-line error, not a wait.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

from biaslens.common.env import number_from_env, seconds_from_env
from biaslens.errors import BiaslensError
from biaslens.models.base import LM
from biaslens.models.config import BackendConfig

OBJECT_STORE_ENV = "BIASLENS_RAY_OBJECT_STORE_MB"
"""Object store size (MB) of a local runtime biaslens starts (default 256: requests and
answers are small)."""
CONNECT_TIMEOUT_ENV = "BIASLENS_RAY_CONNECT_TIMEOUT"
PLACEMENT_TIMEOUT_ENV = "BIASLENS_RAY_PLACEMENT_TIMEOUT"

_PROBE = (
    "import sys, ray\n"
    "ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False, "
    "logging_level='ERROR')\n"
    "ray.shutdown()\n"
)


def import_ray():
    try:
        import ray
    except ImportError:
        raise BiaslensError(
            "--data-parallel and --parallel-cells need Ray: pip install 'biaslens[ray]'"
        ) from None
    return ray


def connect(address: str | None = None):
    """The Ray module, connected: to ``address`` (``auto``, ``HOST:PORT`` or ``ray://…``; else
    ``$RAY_ADDRESS``) when given, else to a runtime already started in this process, else to a
    new local one on the loopback interface."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    options = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True}
    try:
        if address:
            probe(address)
            ray.init(address=address, **options)
        else:
            megabytes = number_from_env(OBJECT_STORE_ENV, 256, int, 75, what="a number of MiB")
            with _loopback_only():
                ray.init(object_store_memory=megabytes * 1024**2, **options)
    except (ConnectionError, RuntimeError, ValueError, SystemExit) as error:
        where = address or "a local runtime"
        raise BiaslensError(f"cannot start or join Ray ({where}): {error}") from None
    return ray


def probe(address: str) -> None:
    """Join ``address`` from a short-lived process first: an address that does not answer as
    a Ray cluster within the connect timeout is one line here."""
    timeout = seconds_from_env(CONNECT_TIMEOUT_ENV, 30.0)
    env = {**os.environ, "RAY_gcs_rpc_server_reconnect_timeout_s": str(max(1, int(timeout)))}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, address],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise BiaslensError(
            f"cannot join Ray at {address}: no Ray cluster answered within {timeout:g} s "
            f"(check the address and that the cluster is up; {CONNECT_TIMEOUT_ENV} sets the "
            "wait)"
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise BiaslensError(f"cannot join Ray at {address}: {reason[:300]}")


@contextmanager
def _loopback_only():
    """Ray takes a node's address from the network unless clusters are off (its setting for
    single machines): then every server of the runtime listens on 127.0.0.1 only."""
    try:
        from ray._private import ray_constants
    except ImportError:  # pragma: no cover - a Ray without the setting
        yield
        return
    previous = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = previous


def devices(resources: dict, replicas: int) -> dict:
    """Resources for each of ``replicas`` workers on a cluster with ``resources``: one GPU each
    where the cluster has enough, else an equal share of its CPUs."""
    if resources.get("GPU", 0) >= replicas:
        return {"num_gpus": 1, "num_cpus": 1}
    cpus = max(1, int(resources.get("CPU", os.cpu_count() or 1)) // replicas)
    return {"num_cpus": cpus}


def admit(replicas: int, resources: dict, device: str, weight_bytes: int | None) -> dict:
    """The resources of each of ``replicas`` model replicas that must all run at once on a
    cluster with ``resources`` (Ray's ``cluster_resources()``), or a one-line refusal before
    any starts: a GPU each when ``device`` asks for one, a CPU each at least, and memory for
    ``weight_bytes`` each (the weights' size on disk: a lower bound of what a copy holds)."""
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 0))
    wants_gpu = device.startswith("cuda")
    if wants_gpu and gpus < replicas:
        raise BiaslensError(
            f"--data-parallel {replicas} with --device {device} needs {replicas} GPUs (one per "
            f"replica); the Ray cluster has {gpus}: use --data-parallel {max(gpus, 1)} or fewer"
        )
    plan = devices({**resources, "GPU": 0} if device == "cpu" else resources, replicas)
    if "num_gpus" not in plan and cpus < replicas:
        raise BiaslensError(
            f"--data-parallel {replicas} needs {replicas} CPUs (one per replica); the Ray "
            f"cluster has {cpus}: use --data-parallel {max(cpus, 1)} or fewer"
        )
    memory = resources.get("memory")
    if "num_gpus" not in plan and weight_bytes and memory:
        if replicas * weight_bytes > memory:
            fits = max(1, int(memory // weight_bytes))
            raise BiaslensError(
                f"--data-parallel {replicas} needs at least {replicas} × "
                f"{weight_bytes / 1e9:.2f} GB for the model's weights; the Ray cluster has "
                f"{memory / 1e9:.2f} GB for workers: use --data-parallel {fits} or fewer"
            )
        plan["memory"] = weight_bytes
    return plan


def placement_timeout() -> float:
    return seconds_from_env(PLACEMENT_TIMEOUT_ENV, 120.0)


def worker_plan(ray, workers: int, config: BackendConfig) -> tuple[dict, int | None, dict]:
    """For ``workers`` Ray workers that each load a model: the resources of one (see
    :func:`devices`), the torch threads it may use (None on a GPU) and the backend settings it
    loads with (one process each: no nested replicas, no second Ray address)."""
    return plan_for(devices(ray.cluster_resources(), workers), config)


def plan_for(resources: dict, config: BackendConfig) -> tuple[dict, int | None, dict]:
    """The torch threads of a worker with ``resources`` (None on a GPU) and the backend
    settings it loads with."""
    threads = None if "num_gpus" in resources else resources["num_cpus"]
    inner = config.with_options(data_parallel=1, ray_address=None)
    return resources, threads, inner.to_dict()


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
