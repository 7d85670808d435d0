"""A model's checkpoint as the user named it, resolved once: :class:`CheckpointRef`.

A name is a local folder or a hub repo id, pinned as ``NAME@REVISION`` or with ``--revision``
(a branch, tag or commit). :func:`checkpoint_ref` reads the name and the revision once, with
every check they need (a folder takes no revision; ``@`` and ``--revision`` must agree; a
revision is a ref name as git allows it; a hub name is a valid repo id), and everything after
it (the download, the folder, the provenance a run records) reads the reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biaslens.errors import BiaslensError, quoted
from biaslens.models.checkpoints import hub, hub_answers


@dataclass(frozen=True)
class CheckpointRef:
    """Where a checkpoint comes from: a local folder (``path``) or a hub repo (``repo_id``)
    at ``revision`` (None: the default branch). ``name`` is the name as given and ``label``
    how messages call it (``model 'org/m' (revision v1)``)."""

    name: str
    label: str
    path: Path | None = None
    repo_id: str | None = None
    revision: str | None = None

    @classmethod
    def at(cls, folder: Path | str, name: str) -> CheckpointRef:
        """A checkpoint folder known by another name (a registered model's, a saved one)."""
        return cls(name, f"model {quoted(name)}", path=Path(folder))

    def folder(self, offline: bool = False) -> Path:
        """The checkpoint folder: the local one, or the hub snapshot (downloaded when online,
        the complete cached one offline)."""
        if self.path is not None:
            return self.path

        return hub.fetch(self.repo_id, self.revision, label=self.label, offline=offline)


def checkpoint_ref(name: str, revision: str | None = None, what: str = "model") -> CheckpointRef:
    """The checkpoint ``name`` names, at ``revision`` (``--revision``) or the ``@REV`` of the
    name; ``what`` names its role in messages (``model``, ``sentence encoder``). Every problem
    with the name or the revision is one line, here."""
    try:
        path = Path(name).expanduser()
        is_folder, exists = path.is_dir(), path.exists()
    except OSError as error:  # e.g. a name longer than the file system allows
        raise BiaslensError(
            f"{what} {name[:80]!r}{'…' if len(name) > 80 else ''}: {error.strerror or error}"
        ) from None
    if is_folder:
        if revision is not None:
            raise BiaslensError(
                f"{what} {quoted(name)} is a local folder: --revision applies to hub names"
            )
        return CheckpointRef(name, f"{what} {quoted(name)}", path=path)
    if exists:
        raise BiaslensError(f"{what} {name}: a file, not a model folder")
    label = f"{what} {quoted(name)}" + (f" (revision {revision})" if revision else "")
    repo_id, at, pinned = name.partition("@")
    if at:
        if not pinned or not repo_id:
            raise BiaslensError(f"{what} {quoted(name)}: NAME@REVISION needs both parts")
        if revision is not None and revision != pinned:
            raise BiaslensError(
                f"{what} {quoted(name)} names revision {pinned!r} but --revision says {revision!r}"
            )
        revision = pinned
    if not hub.is_repo_id(repo_id):
        raise BiaslensError(
            f"unknown {what} {quoted(name)}: not a registered name (see `biaslens models "
            "list`), not a local folder, and not a hub model name (org/name)"
        )
    hub_answers.check_revision(revision, label)
    return CheckpointRef(name, label, repo_id=repo_id, revision=revision)
