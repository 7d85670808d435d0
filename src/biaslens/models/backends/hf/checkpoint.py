"""Checks that the model which will run is the checkpoint: no tensor random, none ignored that a
running module needs, none NaN or infinite. Each refusal is one line naming the folder."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from biaslens.errors import BiaslensError


def check_finite_weights(folder: Path, model) -> None:
    """Refuse a checkpoint whose weights hold NaN or infinity: every probability it gives would
    be NaN, which no metric can read (a broken export or a diverged fine-tune)."""
    with torch.no_grad():
        bad = [
            name
            for name, tensor in [*model.named_parameters(), *model.named_buffers()]
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())
        ]
    if bad:
        raise BiaslensError(
            f"{folder}: {_named(bad)} weight tensor(s) hold NaN or infinite values; the model's "
            "outputs would be NaN (a broken export or a diverged fine-tune?)"
        )


def _named(keys, limit: int = 4) -> str:
    keys = sorted(keys)
    shown = ", ".join(keys[:limit])
    return f"{len(keys)} ({shown}{', …' if len(keys) > limit else ''})"


def check_loaded_tensors(folder: Path, model, model_config, info: dict, config) -> dict[str, str]:
    """Refuse a model that is not the checkpoint: transformers fills tensors the checkpoint
    lacks (or has in another shape) with random values and only logs it, and silently drops
    tensors it does not expect (an adapter, a head of the same architecture).

    * missing / mismatched tensors: a one-line error naming them (``--allow-missing-weights``
      loads them seeded and records it);
    * unexpected tensors: an error when they belong to a module the loaded model runs (an
      adapter inside a layer: the model would run that layer without it); tensors of whole
      modules the model does not have (``bert-base-uncased`` read as a masked LM has a
      next-sentence head and a pooler it never runs) are dropped, and recorded.

    Returns what the model's identity records (``details``)."""
    missing = set(info.get("missing_keys") or ()) | {
        str(k[0]) if isinstance(k, tuple) else str(k) for k in info.get("mismatched_keys") or ()
    }
    unexpected = set(info.get("unexpected_keys") or ())
    loaded_as = type(model).__name__
    saved_as = list(getattr(model_config, "architectures", None) or [])
    details: dict[str, str] = {}
    if missing:
        if not config.options.allow_missing_weights:
            raise BiaslensError(
                f"{folder}: {_named(missing)} tensor(s) that {loaded_as} needs are not in the "
                f"checkpoint (saved as {', '.join(saved_as) or 'an unknown architecture'}) and "
                "would be random; choose the --model-kind of the checkpoint's own head, or a "
                "checkpoint trained for this kind"
            )
        details["random_tensors"] = _named(missing, limit=20)
        warnings.warn(
            f"{folder}: {_named(missing)} tensor(s) are random (--allow-missing-weights): its "
            "numbers are not the checkpoint's",
            stacklevel=3,
        )
    if unexpected:
        modules = {name for name, _ in model.named_modules()}
        inside = {key for key in unexpected if key.rpartition(".")[0] in modules}
        if inside and not config.options.allow_missing_weights:
            raise BiaslensError(
                f"{folder}: the checkpoint holds {_named(inside)} tensor(s) inside modules "
                f"that {loaded_as} runs but does not use (an adapter, or another "
                "architecture's layout?); the model that would run is not the checkpoint"
            )
        details["unused_checkpoint_tensors"] = _named(unexpected, limit=20)
    return details
