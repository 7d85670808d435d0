"""lei-train's unit of work, one (train size, learning rate) group of grid cells, trained here
(:func:`train_cell_group`) or as Ray tasks (``--parallel-cells N``, :func:`train_groups`).

Each Ray task trains one (train size, learning rate) group of the grid on its own device (one GPU,
or an equal share of the CPUs), loading the base model itself and writing its checkpoints, their
``train_log.csv`` and ``DONE`` markers into the run folder (on a cluster, a folder every node
can reach). The driver then evaluates and selects exactly as a sequential run does; a group
whose checkpoints are finished is never retrained, so an interrupted run resumes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from biaslens.common import atomic
from biaslens.errors import BiaslensError
from biaslens.models.config import BackendConfig
from biaslens.models.loader import load_model
from biaslens.models.runtime.ray_runtime import connect, load_in_worker, worker_plan
from biaslens.models.trainable import TrainableLM
from biaslens.progress import NoProgress, Progress
from biaslens.store.run import inside_run

DONE = "DONE"
"""The marker file of a finished checkpoint (written after its weights and train log)."""


def cell_name(size: int, learning_rate: float, epochs: int) -> str:
    return f"n{size}-lr{learning_rate:g}-ep{epochs}"


def train_cell_group(
    base,
    root: Path,
    settings,
    mode: str,
    size: int,
    learning_rate: float,
    epochs: list[int],
    data,
    qa_rows,
    progress,
) -> None:
    """Train the checkpoints of one (train size, learning rate) group into ``root/checkpoints``.

    Linear schedule: one run per epoch count (the schedule depends on the total). Constant
    schedule: one run to the largest count, saving a checkpoint at each requested count. The
    trained copy keeps float32 master weights whatever the evaluation dtype (AdamW updates to
    bf16 weights would mostly round away); the forward pass runs in the backend's dtype under
    autocast. Each finished checkpoint gets its ``train_log.csv`` and then a ``DONE`` marker.
    """
    import torch

    from biaslens.methods.qa.train.lei import LeiTrainConfig, LeiTrainer

    runs = [[e] for e in epochs] if settings.schedule == "linear" else [epochs]
    compute_dtype = next(base.model.parameters()).dtype
    for saves in runs:
        trainee = base.trainable_copy()
        config = LeiTrainConfig(
            **settings.training_options(),
            learning_rate=learning_rate,
            epochs=max(saves),
            batch_size=settings.train_batch_size,
            context_first=settings.qa_order == "context-first",
        )
        autocast = None if compute_dtype == torch.float32 else compute_dtype
        trainer = LeiTrainer(trainee, config, mode, autocast=autocast)

        def save(epoch: int, saves=saves, trainee=trainee) -> None:
            if epoch in saves:
                _save_checkpoint(root, cell_name(size, learning_rate, epoch), trainee)

        log = trainer.train(data, qa_rows, progress, on_epoch_end=save)
        for epoch in saves:
            folder = inside_run(root, f"checkpoints/{cell_name(size, learning_rate, epoch)}")
            atomic.write_csv(folder / "train_log.csv", log[log["epoch"] <= epoch])
            atomic.write_bytes(folder / DONE, b"")
        del trainee, trainer


def _save_checkpoint(root: Path, cell: str, trainee: TrainableLM) -> None:
    folder = inside_run(root, f"checkpoints/{cell}")
    partial = inside_run(root, f"checkpoints/{cell}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    trainee.save_pretrained(partial)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def _train_group(
    load, model: str, config: dict, threads, root, settings, mode, group, data, qa_rows
):
    base = load_in_worker(load, model, config, threads)
    size, learning_rate, epochs = group
    train_cell_group(
        base, Path(root), settings, mode, size, learning_rate, epochs, data, qa_rows, NoProgress()
    )
    return group


def train_groups(
    groups: list[tuple[int, float, list[int]]],
    settings,
    mode: str,
    backend_config: BackendConfig,
    root: Path,
    data: dict,
    qa_rows,
    parallel: int,
    progress: Progress,
) -> None:
    """Train ``groups`` (train size, learning rate, epoch counts) as ``parallel`` Ray tasks."""
    if not groups:
        return

    ray = connect(backend_config.options.ray_address)
    resources, threads, config = worker_plan(ray, parallel, backend_config)
    task = ray.remote(_train_group).options(max_retries=1, **resources)
    tick = progress.task(f"training {len(groups)} grid group(s) on Ray", len(groups))
    refs = [
        task.remote(
            load_model,
            settings.model,
            config,
            threads,
            str(root),
            settings,
            mode,
            group,
            data[group[0]],
            qa_rows,
        )
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
