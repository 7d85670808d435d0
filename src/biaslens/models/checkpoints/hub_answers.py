"""What a hub server says, checked before ``huggingface_hub`` builds cache paths from it.

``huggingface_hub`` names the files of its cache after strings the server sends: a file's
``ETag`` becomes ``blobs/<etag>``, the commit sha (``X-Repo-Commit``, an API answer's ``sha``)
``snapshots/<sha>/`` and ``trees/<sha>.json``, a listed path ``snapshots/<sha>/<path>``, and the
revision asked for ``refs/<revision>``. None of them is checked there, so a hostile or broken
server (or a typo'd ``--revision ../..``) could make it write outside the cache. biaslens checks
each before the client uses it: revisions by git's own rules for ref names
(``git check-ref-format``), and every server answer by a response hook on the client's HTTP
session (:func:`install`, through ``huggingface_hub.set_client_factory``, its public extension
point): an answer that fails is refused with one line naming what the server said.
"""

from __future__ import annotations

import json
import re
import threading

from biaslens.errors import BiaslensError

COMMIT = re.compile(r"[0-9a-f]{40}")
"""A git commit sha as the hub writes it."""
SAFE_ETAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}")
"""An ETag usable as one file name inside ``blobs/`` (the hub's are sha1 or sha256 hex)."""
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


class HostileHubAnswer(BiaslensError):
    """The hub server sent something that would make the client write outside its cache."""


def check_revision(revision: str | None, label: str) -> None:
    """``revision`` (a branch, tag or commit) as git allows a ref name to be; else one line.
    Git's rules (``git check-ref-format``) also keep it a path inside ``refs/``."""
    if revision is None:
        return
    problem = _ref_problem(revision)
    if problem:
        raise BiaslensError(
            f"{label}: revision {revision!r} is not a branch, tag or commit name ({problem})"
        )


def _ref_problem(ref: str) -> str | None:
    if not ref:
        return "it is empty"
    if _REF_FORBIDDEN.search(ref):
        return "it holds a space, control character or one of ~^:?*[\\"
    if ref.startswith(("/", "-")) or ref.endswith(("/", ".")):
        return "it starts with / or - or ends with / or ."
    if ".." in ref or "//" in ref or "@{" in ref or ref == "@":
        return "it holds .., //, or @{"
    if any(part.startswith(".") or part.endswith(".lock") for part in ref.split("/")):
        return "a part starts with . or ends with .lock"
    return None


def check_commit(sha: object, label: str) -> str:
    """The commit sha a server named, when it is one (40 lowercase hex digits)."""
    if not isinstance(sha, str) or not COMMIT.fullmatch(sha):
        raise HostileHubAnswer(
            f"{label}: the hub named commit {_shown(sha)}, which is not a commit sha; nothing "
            "was downloaded (check HF_ENDPOINT)"
        )
    return sha


def check_repo_path(path: object, label: str) -> str:
    """A file path a server listed, when it stays inside the snapshot folder."""
    parts = path.split("/") if isinstance(path, str) else []
    if (
        not parts
        or "\\" in path
        or "\x00" in path
        or path.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise HostileHubAnswer(
            f"{label}: the hub listed the file {_shown(path)}, a path outside the model's "
            "folder; nothing was downloaded (check HF_ENDPOINT)"
        )
    return path


def check_answer(response) -> None:
    """The response hook: what ``huggingface_hub`` would turn into cache paths, checked."""
    label = f"the hub's answer to {response.request.method} {response.request.url.path}"
    commit = response.headers.get("X-Repo-Commit")
    if commit is not None:
        check_commit(commit, label)
    if "/resolve/" in response.request.url.path:
        for header in ("X-Linked-Etag", "ETag"):
            value = response.headers.get(header)
            if value is not None:
                etag = value.removeprefix("W/").strip('"')
                if not SAFE_ETAG.fullmatch(etag):
                    raise HostileHubAnswer(
                        f"{label}: its {header} {_shown(value)} is not a file name the cache "
                        "can use; nothing was downloaded (check HF_ENDPOINT)"
                    )
    path = response.request.url.path
    if path.startswith("/api/") and response.status_code == 200:
        if "json" in response.headers.get("Content-Type", ""):
            response.read()
            try:
                answer = json.loads(response.content)
            except ValueError:
                return
            _check_api_answer(answer, label)


def _check_api_answer(answer: object, label: str) -> None:
    """A repo info (``sha``, ``siblings``) or a tree listing (``path`` of each entry)."""
    if isinstance(answer, dict):
        if "sha" in answer and answer["sha"] is not None:
            check_commit(answer["sha"], label)
        for sibling in answer.get("siblings") or ():
            if isinstance(sibling, dict) and "rfilename" in sibling:
                check_repo_path(sibling["rfilename"], label)
    elif isinstance(answer, list):
        for entry in answer:
            if isinstance(entry, dict) and "path" in entry:
                check_repo_path(entry["path"], label)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_lock = threading.Lock()
_installed = False


def install() -> None:
    """Add :func:`check_answer` to every HTTP client ``huggingface_hub`` makes from now on,
    on top of whatever factory is set (a user's proxy settings stay)."""
    global _installed
    with _lock:
        if _installed:
            return
        from huggingface_hub import set_client_factory
        from huggingface_hub.utils import _http

        previous = getattr(_http, "_GLOBAL_CLIENT_FACTORY", _http.default_client_factory)

        def checked_client():
            client = previous()
            hooks = dict(client.event_hooks)
            hooks["response"] = [*hooks.get("response", []), check_answer]
            client.event_hooks = hooks
            return client

        set_client_factory(checked_client)
        _installed = True
