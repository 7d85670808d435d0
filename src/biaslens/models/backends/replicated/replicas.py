"""Data-parallel model replicas on Ray (``--data-parallel N``).

:class:`ReplicatedLM` is a backend like any other: N Ray actors each load the same model on
the chosen backend (one GPU each, or an equal share of the CPUs), and the driver

* sorts the requests by length and cuts them into shards, so each replica pads little;
* keeps every replica busy (two shards in flight each), merges answers in request order and
  reports progress as shards finish;
* retries the unfinished shards of a replica that dies on the others (nothing lost, nothing
  answered twice), and stops with a clear error only when no replica is left or the runtime is
  gone.

The request cache stays with the driver (only it writes); the identity is the replicas', so
answers are cached under the same key as a single process's.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable

from biaslens.errors import BiaslensError
from biaslens.models.base import LM
from biaslens.models.config import BackendConfig
from biaslens.models.loader import weight_bytes
from biaslens.models.options import InProcess
from biaslens.models.requests import as_fields
from biaslens.models.runtime.forwarding import ForwardingLM
from biaslens.models.runtime.ray_runtime import (
    admit,
    connect,
    load_in_worker,
    placement_timeout,
    plan_for,
)

Loader = Callable[[str, BackendConfig], LM]
"""How a replica loads its model: ``load(name, config)`` (the registry's ``load_model``)."""


class _Replica:
    """One model replica (the body of a Ray actor): placed first, then asked to load, so that
    a replica the cluster cannot place and a model that cannot load are told apart."""

    def __init__(self) -> None:
        self.lm: LM | None = None

    def pid(self) -> int:
        return os.getpid()

    def load(self, load: Loader, name: str, config: dict, threads: int | None):
        self.lm = load_in_worker(load, name, config, threads)
        return self.lm.identity, dict(self.lm.capabilities)

    def answer(self, requests: list) -> list:
        return self.lm.answer(requests)


def _size(request) -> int:
    return sum(len(v) for v in as_fields(request).values() if isinstance(v, str))


class ReplicatedLM(ForwardingLM):
    """N replicas of one model on Ray, answering as one backend (see the module)."""

    in_flight_per_replica = 2

    def __init__(
        self, name: str, config: BackendConfig, load: Loader, weight_bytes: int | None = None
    ) -> None:
        self.ray = ray = connect(config.options.ray_address)
        self.config = config
        self.actors: list = []
        replicas = config.options.data_parallel
        # a backend that runs no model in process (a server's client) needs no GPU per replica
        device = config.options.device if isinstance(config.options, InProcess) else "cpu"
        resources = admit(replicas, ray.cluster_resources(), device, weight_bytes)
        resources, threads, options = plan_for(resources, config)
        actor = ray.remote(_Replica).options(max_restarts=0, **resources)
        self.actors = [actor.remote() for _ in range(replicas)]
        try:
            self._await_placement(resources)
            described = ray.get([a.load.remote(load, name, options, threads) for a in self.actors])
        except ray.exceptions.RayTaskError as error:
            self.close()
            raise _cause(error, name) from None
        except ray.exceptions.RayActorError:
            self.close()
            raise BiaslensError(
                f"a replica of model {name} died while loading it (out of memory? each replica "
                "holds a copy of the weights): use a smaller --data-parallel"
            ) from None
        self.identity, self._capabilities = described[0]
        self.cache_chunk_size = 64 * replicas
        """Answers committed to a run's cache per chunk (a dead runtime loses at most one)."""

    def _await_placement(self, resources: dict) -> None:
        """Wait until every replica's process runs; a cluster that cannot place them all in
        the placement timeout is a one-line error, not an endless wait."""
        timeout = placement_timeout()
        started, _ = self.ray.wait(
            [a.pid.remote() for a in self.actors], num_returns=len(self.actors), timeout=timeout
        )
        if len(started) < len(self.actors):
            self.close()
            raise BiaslensError(
                f"only {len(started)} of {self.config.options.data_parallel} model replicas "
                f"could be placed on the Ray cluster within {timeout:g} s (each needs "
                f"{resources}; free now: {_free(self.ray)}): use a smaller --data-parallel, or "
                "wait for the cluster"
            )

    @property
    def capabilities(self):
        return self._capabilities

    def replica_pids(self) -> list[int]:
        return self.ray.get([a.pid.remote() for a in self.actors])

    def _answer(self, requests, progress) -> list:
        ray = self.ray
        if not requests:
            return []
        self.require(type(requests[0]).request_type, exact=False)
        order = sorted(range(len(requests)), key=lambda i: -_size(requests[i]))
        size = min(256, max(8, math.ceil(len(requests) / (4 * len(self.actors)))))
        shards = deque(order[start : start + size] for start in range(0, len(order), size))
        results: list = [None] * len(requests)
        alive = list(self.actors)
        flying: dict = {}  # ObjectRef -> (shard, actor)
        while shards or flying:
            for actor in alive:
                busy = sum(1 for _, owner in flying.values() if owner is actor)
                while shards and busy < self.in_flight_per_replica:
                    shard = shards.popleft()
                    ref = actor.answer.remote([requests[i] for i in shard])
                    flying[ref] = (shard, actor)
                    busy += 1
            done, _ = ray.wait(list(flying), num_returns=1)
            ref = done[0]
            shard, actor = flying.pop(ref)
            try:
                answers = ray.get(ref)
            except ray.exceptions.RayActorError:
                # the replica died: its unfinished shards go to the others
                lost = [s for r, (s, a) in list(flying.items()) if a is actor]
                for r in [r for r, (_, a) in flying.items() if a is actor]:
                    flying.pop(r)
                shards.extendleft([shard, *lost])
                alive = [a for a in alive if a is not actor]
                if not alive:
                    raise BiaslensError(
                        f"all {len(self.actors)} model replicas died; finished answers are kept in "
                        "the run's cache, rerun the same command to resume"
                    ) from None
                continue
            except ray.exceptions.RayTaskError as error:
                raise _cause(error) from None
            except (ray.exceptions.RaySystemError, ConnectionError) as error:
                raise BiaslensError(
                    f"the Ray runtime is gone ({type(error).__name__}); finished answers are kept "
                    "in the run's cache, rerun the same command to resume"
                ) from None
            for i, answer in zip(shard, answers, strict=True):
                results[i] = answer
            if progress is not None:
                progress(len(shard))
        self.actors = alive
        return results

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # already gone
                pass
        self.actors = []


def _cause(error, name: str | None = None) -> Exception:
    """The replica's own exception as one line (a BiaslensError keeps its words), naming the
    model when the replica failed to load it."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BiaslensError):
        text = str(cause)
        return BiaslensError(text if name is None or name in text else f"model {name}: {text}")
    lines = str(cause or error).strip().splitlines() or [""]
    detail = f"{type(cause or error).__name__}: {lines[-1]}"
    if name is not None:
        return BiaslensError(f"a replica could not load model {name}: {detail}")
    return BiaslensError(f"a model replica failed: {detail}")


def _free(ray) -> dict:
    free = ray.available_resources()
    return {k: round(v, 1) for k, v in free.items() if k in ("CPU", "GPU")}


def load_replicated(name: str, config: BackendConfig, load: Loader) -> ReplicatedLM:
    """``config.options.data_parallel`` replicas of model ``name`` on Ray, each loaded by ``load``
    (admitted by the size of its weights, when it has a checkpoint here)."""
    return ReplicatedLM(name, config, load, weight_bytes(name, config))
