"""lei-train grid cells as Ray tasks (``--parallel-cells N``).

Each task trains one (train size, learning rate) group of the grid on its own device (one GPU,
or an equal share of the CPUs), loading the base model itself and writing its checkpoints, their
``train_log.csv`` and ``DONE`` markers into the run folder (on a cluster, a folder every node
can reach). The driver then evaluates and selects exactly as a sequential run does; a group
whose checkpoints are finished is never retrained, so an interrupted run resumes.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from biaslens.errors import BiaslensError
from biaslens.models.base import BackendConfig
from biaslens.models.ray_runtime import connect, devices
from biaslens.progress import NoProgress, Progress


def _train_group(model: str, config: dict, threads, root, settings, mode, group, data, qa_rows):
    if threads:
        import torch

        os.environ["OMP_NUM_THREADS"] = str(threads)
        torch.set_num_threads(threads)
    from biaslens.experiments.lei_train import train_cell_group
    from biaslens.models.registry import load_model

    base = load_model(model, BackendConfig(**config))
    size, learning_rate, epochs = group
    train_cell_group(
        base, Path(root), settings, mode, size, learning_rate, epochs, data, qa_rows, NoProgress()
    )
    return group


def train_groups(
    groups: list[tuple[int, float, list[int]]],
    settings,
    mode: str,
    backend: BackendConfig,
    root: Path,
    data: dict,
    qa_rows,
    parallel: int,
    progress: Progress,
) -> None:
    """Train ``groups`` (train size, learning rate, epoch counts) as ``parallel`` Ray tasks."""
    if not groups:
        return
    ray = connect(backend.ray_address)
    resources = devices(ray, parallel)
    threads = None if "num_gpus" in resources else resources["num_cpus"]
    task = ray.remote(_train_group).options(max_retries=1, **resources)
    config = dataclasses.asdict(dataclasses.replace(backend, data_parallel=1, ray_address=None))
    tick = progress.task(f"training {len(groups)} grid group(s) on Ray", len(groups))
    refs = [
        task.remote(
            settings.model,
            config,
            threads,
            str(root),
            settings,
            mode,
            group,
            data[group[0]],
            qa_rows,
        )  # fmt: skip
        for group in groups
    ]
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        try:
            ray.get(done[0])
        except ray.exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None) or error
            raise BiaslensError(
                f"a grid cell failed on Ray: {cause}; finished checkpoints are kept, rerun the "
                "same command to resume"
            ) from None
        except (ray.exceptions.RaySystemError, ray.exceptions.WorkerCrashedError) as error:
            raise BiaslensError(
                f"Ray lost a training task ({type(error).__name__}); finished checkpoints are "
                "kept, rerun the same command to resume"
            ) from None
        tick(1)
