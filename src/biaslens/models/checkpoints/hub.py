"""Models by their Hugging Face Hub names: download, revision, and the commit a name resolves to.

A name that is neither a registered model nor a local folder is a hub repo id (``gpt2``,
``deepset/roberta-base-squad2``), optionally pinned as ``NAME@REVISION`` or with ``--revision``
(a branch, tag or commit), read once into a :class:`~.reference.CheckpointRef`. Online,
:func:`fetch` downloads it through ``huggingface_hub`` (its
cache, its resumable per-file downloads, its progress bars, ``HF_TOKEN`` / ``hf auth login`` for
gated models), only the files a model needs (one weight format, no TensorFlow/Flax/ONNX copies).
Offline (``HF_HUB_OFFLINE=1`` or ``--offline``), only a complete cached snapshot is used.

Every failure is one line that names the model and never the token: no such repo, gated,
no such revision, no weights of a supported kind, the hub unreachable after retries with
back-off, no disk space. ``huggingface_hub`` moves a file into its cache only once it is whole,
and refuses a snapshot whose listing says it is incomplete, so a half-downloaded model is never
loaded; the next run downloads only the files still missing.

The commit is read from the snapshot folder itself (``…/models--org--name/snapshots/<sha>``):
:func:`snapshot_source` gives the provenance (repo id, revision asked, commit) of any folder
loaded from the hub cache, however it got there.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import TypeVar

from biaslens import secrets
from biaslens.common.atomic import write_bytes
from biaslens.common.env import number_from_env
from biaslens.common.urls import redact_url
from biaslens.errors import BiaslensError
from biaslens.models.checkpoints import hub_answers

RETRIES_ENV = "BIASLENS_HUB_RETRIES"
BACKOFF_ENV = "BIASLENS_HUB_BACKOFF"
DEFAULT_RETRIES = 4
"""Attempts at a hub call that failed transiently (5xx, 429, timeout, refused connection)."""
DEFAULT_BACKOFF = 2.0
"""Seconds before the second attempt; doubled before each further one (2, 4, 8 s)."""

WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth")
OTHER_FORMATS = [
    "*.h5",
    "*.msgpack",
    "*.ot",
    "*.onnx",
    "*.onnx_data",
    "*.tflite",
    "*.gguf",
    "*.ggml",
    "*.mlmodel",
    "*.npz",
    "*.ckpt",
    "onnx/*",
    "openvino/*",
    "coreml/*",
    "tf_model*",
    "flax_model*",
]
"""Files of other frameworks and formats that transformers does not load here: never fetched."""
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
_T = TypeVar("_T")


@dataclass(frozen=True)
class HubSource:
    """Where a model folder came from on the hub: the repo, the revision asked for (None: the
    default branch) and the commit it resolved to."""

    repo_id: str
    commit: str
    revision: str | None = None

    def describe(self) -> tuple[tuple[str, str], ...]:
        """As a model identity records it (``summary.json``, ``config.yaml``, the report)."""
        return (
            ("repo_id", self.repo_id),
            ("revision", self.revision or "main"),
            ("commit_sha", self.commit),
        )


def is_offline(offline: bool = False) -> bool:
    """``--offline``, or ``HF_HUB_OFFLINE`` as ``huggingface_hub`` reads it (and as set now)."""
    if offline:
        return True
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE", "")
    return bool(constants.HF_HUB_OFFLINE) or value.upper() in ("1", "ON", "YES", "TRUE")


def is_repo_id(name: str) -> bool:
    """Whether ``name`` can be a hub model id (``gpt2``, ``org/name``)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def snapshot_source(folder: Path, revision: str | None = None) -> HubSource | None:
    """The hub provenance of a folder inside the Hugging Face cache
    (``models--org--name/snapshots/<commit>``), with ``revision`` the revision asked for (a
    :class:`~.reference.CheckpointRef`'s: None when the folder was named by its path); None
    for any other folder."""
    folder = Path(folder)
    parent = folder.parent
    if parent.name != "snapshots" or not COMMIT_RE.fullmatch(folder.name):
        return None
    repo = parent.parent.name
    if not repo.startswith("models--"):
        return None
    return HubSource(repo.removeprefix("models--").replace("--", "/"), folder.name, revision)


def fetch(repo_id: str, revision: str | None, *, label: str, offline: bool = False) -> Path:
    """The local snapshot folder of hub repo ``repo_id`` at ``revision`` (both checked by
    :func:`~.reference.checkpoint_ref`; ``label`` names the model in messages): downloaded when
    online (only missing files), the cached complete snapshot when offline."""
    if is_offline(offline):
        return _cached(repo_id, revision, label)
    hub_answers.install()
    try:
        info = _with_retries(label, lambda: _model_info(repo_id, revision))
    except _Unreachable as unreachable:
        try:  # as huggingface_hub itself does: a complete cached snapshot serves while it is down
            folder = _cached(repo_id, revision, label)
        except BiaslensError:
            raise BiaslensError(str(unreachable)) from None
        print(f"note: {unreachable}; using the cached snapshot {folder.name}", file=sys.stderr)
        return folder
    commit = hub_answers.check_commit(info.sha, label)
    files = [hub_answers.check_repo_path(s.rfilename, label) for s in info.siblings or ()]
    ignore = _ignore_patterns(files, label)
    from huggingface_hub import snapshot_download

    print(f"Fetching {label} at commit {commit[:12]} from the hub...", file=sys.stderr)
    # The commit, not the revision: every file of one commit, and no second answer naming
    # another (a branch moved meanwhile, or a server changing its story).
    folder = _with_retries(
        label,
        lambda: _progress_shown(
            lambda: snapshot_download(repo_id, revision=commit, ignore_patterns=ignore)
        ),
    )
    if revision != commit:
        _remember_revision(Path(folder), revision or "main", commit)
    return Path(folder)


def _remember_revision(snapshot: Path, revision: str, commit: str) -> None:
    """``refs/<revision>`` of the repo's cache folder names ``commit``, as huggingface_hub
    writes it, so that the revision is found offline (``revision`` is checked: a ref name)."""
    refs = snapshot.parent.parent / "refs"
    target = refs / revision
    if refs.resolve() not in target.resolve().parents:  # pragma: no cover - checked before
        raise BiaslensError(f"revision {revision!r} is not a branch, tag or commit name")
    target.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(target, commit.encode())


def _model_info(repo_id: str, revision: str | None):
    from huggingface_hub import HfApi, constants

    return HfApi().model_info(repo_id, revision=revision, timeout=constants.HF_HUB_ETAG_TIMEOUT)


def _ignore_patterns(files: list[str], label: str) -> list[str]:
    """What not to fetch: other formats always, ``.bin`` copies when safetensors exist. A repo
    with no weights of a kind transformers loads here is refused before anything is fetched."""

    def matching(patterns) -> list[str]:
        return [f for f in files if any(fnmatch(f.rsplit("/", 1)[-1], p) for p in patterns)]

    if files and not matching(WEIGHT_PATTERNS):
        others = sorted({Path(f).suffix or f for f in files if Path(f).suffix not in (".md",)})
        raise BiaslensError(
            f"{label} has no weights transformers can load here (*.safetensors or PyTorch "
            f"*.bin); the repo holds {', '.join(others[:8]) or 'no files'}"
        )
    if matching(("*.safetensors",)):
        return [*OTHER_FORMATS, "*.bin", "*.pt", "*.pth"]
    return list(OTHER_FORMATS)


def _cached(repo_id: str, revision: str | None, label: str) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id, revision=revision, local_files_only=True))
    except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
        command = f"hf download {repo_id}" + (f" --revision {revision}" if revision else "")
        raise BiaslensError(
            f"{label} is not (completely) in the local Hugging Face cache, and HF_HUB_OFFLINE=1 "
            f"or --offline keeps biaslens offline: fetch it with `{command}`, or run the same "
            "command online"
        ) from None


class _Unreachable(BiaslensError):
    """The hub did not answer after every retry."""


def _with_retries(label: str, call: Callable[[], _T]) -> _T:
    """``call()`` with hub errors turned into one line; transient ones retried with back-off."""
    attempts = number_from_env(RETRIES_ENV, DEFAULT_RETRIES, int, 1, 100, "a number of tries")
    delay = number_from_env(BACKOFF_ENV, DEFAULT_BACKOFF, float, 0, 3600, "a number of seconds")
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as error:  # noqa: BLE001 - classified below
            if _offline(error):
                raise _Unreachable(
                    f"{label}: the hub at {_endpoint()} cannot be reached (its name does not "
                    "resolve: this machine looks offline); a model already downloaded runs "
                    "offline, with HF_HUB_OFFLINE=1"
                ) from None
            reason = _transient_reason(error)
            if reason is None:
                raise _one_line(error, label) from None
            if attempt == attempts:
                raise _Unreachable(
                    f"{label}: the hub at {_endpoint()} failed ({reason}) after "
                    f"{attempts} tries; try again later (a model already downloaded also runs "
                    "offline, with HF_HUB_OFFLINE=1)"
                ) from None
            print(f"note: the hub failed ({reason}); retrying in {delay:g} s", file=sys.stderr)
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")  # pragma: no cover


NAME_NOT_RESOLVED = (
    "Name or service not known",
    "nodename nor servname",
    "Temporary failure in name resolution",
    "No address associated",
    "getaddrinfo failed",
)
"""How a failed name look-up reads (glibc, macOS, Windows): a machine without a network,
where retrying with back-off only makes the user wait."""


def _offline(error: BaseException) -> bool:
    """Whether ``error`` (or an error it came from) is a failed name look-up."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(text in str(current) for text in NAME_NOT_RESOLVED):
            return True
        current = current.__cause__ or current.__context__
    return False


def _transient_reason(error: BaseException) -> str | None:
    """Why a hub call failed, when trying again may help (server errors, rate limits, timeouts,
    dropped connections); None for an answer that will not change."""
    from huggingface_hub.errors import HfHubHTTPError

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, HfHubHTTPError):
            status = getattr(current.response, "status_code", None)
            if status is not None and (status >= 500 or status in (408, 429)):
                return f"HTTP {status}"
            return None
        name = type(current).__name__
        if "Timeout" in name:
            return "timed out"
        if name in ("ConnectError", "RemoteProtocolError", "ReadError", "NetworkError"):
            return "connection failed" if name == "ConnectError" else "connection dropped"
        current = current.__cause__ or current.__context__
    return None


def _one_line(error: BaseException, label: str) -> BiaslensError:
    """A hub error as one line naming the model (never a token or a traceback)."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(error, BiaslensError):
        return error
    if isinstance(error, GatedRepoError):
        has_token = bool(_token())
        return BiaslensError(
            f"{label} is gated: "
            + (
                "the token in use has no access to it; accept its terms on the model's hub "
                "page with that account"
                if has_token
                else "accept its terms on the model's hub page, then log in (`hf auth login`) "
                "or set HF_TOKEN"
            )
        )
    if isinstance(error, RevisionNotFoundError):
        return BiaslensError(
            f"{label}: no such revision on the hub (give a branch, tag or commit of the repo)"
        )
    if isinstance(error, RepositoryNotFoundError):
        return BiaslensError(
            f"{label}: no such model on the hub at {_endpoint()} (check the name; a private "
            "model needs `hf auth login` or HF_TOKEN)"
        )
    if isinstance(error, EntryNotFoundError):
        return BiaslensError(f"{label}: a file listed by the hub could not be fetched; try again")
    if isinstance(error, HFValidationError):
        return BiaslensError(f"{label}: not a valid hub model name")
    if isinstance(error, HfHubHTTPError):
        status = getattr(error.response, "status_code", "?")
        return BiaslensError(f"{label}: the hub answered HTTP {status}")
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        from huggingface_hub import constants

        return BiaslensError(
            f"{label}: no space left on the device to download it into {constants.HF_HUB_CACHE} "
            "(free space, or set HF_HOME to a larger disk); nothing partial is kept"
        )
    if isinstance(error, OSError) and "Consistency check failed" in str(error):
        return BiaslensError(
            f"{label}: a file arrived incomplete (the connection dropped); run again to resume"
        )
    text = _redacted(str(error).strip().splitlines()[0] if str(error).strip() else "")
    return BiaslensError(f"{label}: download failed ({type(error).__name__}: {text[:200]})")


def _progress_shown(call: Callable[[], _T]) -> _T:
    """Run a download with huggingface_hub's progress bars on (transformers turns them off),
    unless the user turned them off (``HF_HUB_DISABLE_PROGRESS_BARS``)."""
    from huggingface_hub.utils import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    if os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") or not are_progress_bars_disabled():
        return call()
    enable_progress_bars()
    try:
        return call()
    finally:
        disable_progress_bars()


def _endpoint() -> str:
    from huggingface_hub import constants

    return redact_url(constants.ENDPOINT)


def _token() -> str | None:
    from huggingface_hub import get_token

    try:
        return get_token()
    except Exception:  # noqa: BLE001 - an unreadable token file is no token
        return None


def _redacted(text: str) -> str:
    """``text`` without the user's token (or anything shaped like a hub token)."""
    secrets.hold(_token())  # and from now on in every message of the process
    return re.sub(r"hf_[A-Za-z0-9]{8,}", "hf_***", secrets.redact(text))
