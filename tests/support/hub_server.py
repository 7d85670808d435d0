"""A small Hugging Face Hub-compatible HTTP server for tests of the download path.

It answers the calls the real ``huggingface_hub`` client makes for ``snapshot_download`` and
``HfApi.model_info`` (``HF_ENDPOINT=http://127.0.0.1:PORT``), from model folders in memory:

* ``GET /api/models/{repo}[/revision/{rev}]``: id, the resolved commit ``sha``, ``siblings``;
* ``GET /api/models/{repo}/tree/{rev}?recursive=…``: the file listing (``type``, ``path``,
  ``size``, ``oid``);
* ``HEAD`` / ``GET /{repo}/resolve/{rev}/{path}``: the file, with ``X-Repo-Commit``, ``ETag`` and
  ``Content-Length``; ``Range`` requests answered with 206.

Uploads (``HfApi.create_repo`` / ``upload_folder``), with a bearer token: ``POST
/api/repos/create``, ``POST /api/{models|datasets}/{repo}/preupload/{rev}`` (every file a
regular, inlined upload), ``POST /api/validate-yaml`` (a card's header, accepted) and ``POST
…/commit/{rev}`` (the NDJSON commit: a new commit on the branch, or with ``create_pr=1`` on
``refs/pr/N``, answered with the pull request's address). Dataset repos are kept as
``datasets/{repo}``.

Errors carry the ``X-Error-Code`` header the client maps them by (``RepoNotFound``,
``RevisionNotFound``, ``EntryNotFound``, ``GatedRepo``). Faults for tests: a gated repo that needs
a bearer token, transfers dropped after N bytes, stalled responses, 5xx answers, and a hostile
server's answers (a commit sha, ETag or listed path that is a path outside the cache). Every
request is logged (method, path, ``Range``, whether a token came) for assertions; tokens
themselves are not.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class HubRepo:
    """A model repo: commits (sha -> files), refs (branch or tag -> sha), access rules."""

    repo_id: str
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    gated_token: str | None = None
    """When set, every call needs ``Authorization: Bearer <gated_token>``."""

    def add(self, files: dict[str, bytes], *refs: str) -> str:
        """Add a commit holding ``files`` and point ``refs`` (e.g. ``main``, ``v1``) at it."""
        digest = hashlib.sha1(self.repo_id.encode())
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
        sha = digest.hexdigest()
        self.commits[sha] = dict(files)
        for ref in refs or ("main",):
            self.refs[ref] = sha
        return sha

    def resolve(self, revision: str) -> str | None:
        if revision in self.commits:
            return revision
        return self.refs.get(revision)


@dataclass
class HubFaults:
    """Faults the server injects (tests change them while it runs)."""

    drop_after: dict[str, int] = field(default_factory=dict)
    """File name -> bytes sent before the connection is dropped (each GET of it)."""
    drop_times: int = 10**9
    """How many GETs of a dropped file are dropped (then it is sent whole)."""
    stall_seconds: float = 0.0
    """Seconds every API answer waits before its first byte."""
    server_errors: int = 0
    """How many API calls are answered 503 before the server recovers."""
    commit: str | None = None
    """A hostile server: the commit sha every answer names (API ``sha``, ``X-Repo-Commit``)."""
    etag: str | None = None
    """A hostile server: the ``ETag`` of every file."""
    listed: tuple[str, ...] = ()
    """A hostile server: file paths listed beside the repo's own (``../../x``)."""


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by its relative path (as a repo would hold them)."""
    folder = Path(folder)
    return {
        str(p.relative_to(folder)).replace("\\", "/"): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


class Hub:
    """The server's state: repos, faults and the request log."""

    def __init__(self) -> None:
        self.repos: dict[str, HubRepo] = {}
        self.faults = HubFaults()
        self.log: list[dict] = []
        self._lock = threading.Lock()
        self._dropped: dict[str, int] = {}

    def reset(self) -> None:
        """No faults, an empty log (between tests)."""
        with self._lock:
            self.faults = HubFaults()
            self.log.clear()
            self._dropped.clear()

    def repo(self, repo_id: str, gated_token: str | None = None) -> HubRepo:
        repo = self.repos.setdefault(repo_id, HubRepo(repo_id))
        repo.gated_token = gated_token if gated_token is not None else repo.gated_token
        return repo

    def add_folder(self, repo_id: str, folder: Path, *refs: str, **extra: bytes) -> str:
        """Publish a model folder (plus ``extra`` files) as a commit of ``repo_id``."""
        return self.repo(repo_id).add({**folder_files(folder), **extra}, *refs)

    def requests(self, method: str | None = None, contains: str = "") -> list[dict]:
        with self._lock:
            return [
                r
                for r in self.log
                if (method is None or r["method"] == method) and contains in r["path"]
            ]

    def record(self, entry: dict) -> None:
        with self._lock:
            self.log.append(entry)

    def take_drop(self, name: str) -> int | None:
        """Bytes to send of ``name`` before dropping this GET, or None to send it whole."""
        limit = self.faults.drop_after.get(name)
        if limit is None:
            return None
        with self._lock:
            done = self._dropped.get(name, 0)
            if done >= self.faults.drop_times:
                return None
            self._dropped[name] = done + 1
        return limit

    def take_server_error(self) -> bool:
        with self._lock:
            if self.faults.server_errors > 0:
                self.faults.server_errors -= 1
                return True
        return False


class _Handler(BaseHTTPRequestHandler):
    hub: Hub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    # ---------------------------------------------------------------- dispatch
    def do_GET(self) -> None:
        self._dispatch(send_body=True)

    def do_HEAD(self) -> None:
        self._dispatch(send_body=False)

    def do_POST(self) -> None:
        path = unquote(urlsplit(self.path).path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        token = self.headers.get("Authorization")
        self.hub.record({"method": "POST", "path": path, "range": None, "token": bool(token)})
        if not token:
            return self._error(401, None, "Invalid username or password.")
        if path == "/api/repos/create":
            data = json.loads(body)
            repo_id = "/".join(p for p in (data.get("organization"), data["name"]) if p)
            prefix = "datasets/" if data.get("type") == "dataset" else ""
            self.hub.repos.setdefault(prefix + repo_id, HubRepo(prefix + repo_id))
            base = f"http://{self.headers.get('Host')}"
            return self._json({"url": f"{base}/{prefix}{repo_id}", "name": repo_id})
        if path == "/api/validate-yaml":  # the dataset card's header: accepted as it is
            return self._json({"errors": [], "warnings": []})
        kind, _, rest = path.removeprefix("/api/").partition("/")
        repo_id, action, revision = rest.rsplit("/", 2) if rest.count("/") >= 2 else ("", "", "")
        key = f"datasets/{repo_id}" if kind == "datasets" else repo_id
        repo = self.hub.repos.get(key)
        if repo is None or action not in ("preupload", "commit"):
            return self._error(404, "RepoNotFound", f"Repository not found: {repo_id}")
        if action == "preupload":
            files = json.loads(body)["files"]
            return self._json({"files": [{"path": f["path"], "uploadMode": "regular",
                                          "shouldIgnore": False} for f in files]})  # fmt: skip
        current = repo.commits.get(repo.refs.get(revision, ""), {})
        added = {}
        for line in body.decode().splitlines():
            entry = json.loads(line)
            if entry["key"] == "file":
                added[entry["value"]["path"]] = base64.b64decode(entry["value"]["content"])
        host = f"http://{self.headers.get('Host')}"
        if parse_qs(urlsplit(self.path).query).get("create_pr") == ["1"]:  # a pull request
            number = 1 + sum(ref.startswith("refs/pr/") for ref in repo.refs)
            sha = repo.add({**current, **added}, f"refs/pr/{number}")
            pull = f"{host}/{key}/discussions/{number}"
        else:
            sha, pull = repo.add({**current, **added}, revision), None
        url = f"{host}/{key}/commit/{sha}"
        return self._json({"commitUrl": url, "commitOid": sha, "pullRequestUrl": pull})

    def _dispatch(self, send_body: bool) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.hub.record(
            {
                "method": self.command,
                "path": path,
                "range": self.headers.get("Range"),
                "token": bool(self.headers.get("Authorization")),
            }
        )
        if path.startswith("/api/models/"):
            if self.hub.faults.stall_seconds:
                time.sleep(self.hub.faults.stall_seconds)
            if self.hub.take_server_error():
                return self._error(503, None, "the hub is down for maintenance")
            return self._api(path.removeprefix("/api/models/"), parse_qs(url.query))
        if "/resolve/" in path:
            repo_id, _, rest = path.strip("/").partition("/resolve/")
            revision, _, name = rest.partition("/")
            return self._file(repo_id, revision, name, send_body)
        return self._error(404, "RepoNotFound", "not found")

    # ---------------------------------------------------------------- answers
    def _repo(self, repo_id: str) -> HubRepo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", f"Repository not found: {repo_id}")
            return None
        if repo.gated_token is not None:
            if self.headers.get("Authorization") != f"Bearer {repo.gated_token}":
                self._error(401, "GatedRepo", f"Access to model {repo_id} is restricted.")
                return None
        return repo

    def _commit(self, repo_id: str, revision: str) -> tuple[str, dict[str, bytes]] | None:
        """The commit sha and files ``revision`` names in ``repo_id``; None once an error reply
        (no such repo, not allowed, no such revision) is sent."""
        repo = self._repo(repo_id)
        if repo is None:
            return None
        sha = repo.resolve(revision)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return None
        return sha, repo.commits[sha]

    def _api(self, rest: str, query: dict) -> None:
        if "/tree/" in rest:
            repo_id, _, tail = rest.partition("/tree/")
            revision, _, _sub = tail.partition("/")
            kind = "tree"
        elif "/revision/" in rest:
            repo_id, _, revision = rest.partition("/revision/")
            kind = "info"
        else:
            repo_id, revision, kind = rest.strip("/"), "main", "info"
        found = self._commit(repo_id, revision)
        if found is None:
            return
        sha, files = found
        sha = self.hub.faults.commit or sha
        files = {**dict.fromkeys(self.hub.faults.listed, b"x"), **files}
        if kind == "tree":
            listing = [
                {
                    "type": "file",
                    "path": name,
                    "size": len(data),
                    "oid": hashlib.sha1(data).hexdigest(),
                }
                for name, data in sorted(files.items())
            ]
            return self._json(listing)
        return self._json(
            {
                "id": repo_id,
                "modelId": repo_id,
                "sha": sha,
                "private": False,
                "gated": "manual" if self.hub.repos[repo_id].gated_token else False,
                "tags": [],
                "siblings": [{"rfilename": name} for name in sorted(files)],
            }
        )

    def _file(self, repo_id: str, revision: str, name: str, send_body: bool) -> None:
        found = self._commit(repo_id, revision)
        if found is None:
            return
        sha, files = found
        data = files.get(name)
        if data is None:
            return self._error(404, "EntryNotFound", f"Entry not found: {name}")
        start = 0
        status = 200
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes=") and send_body:
            start = int(wanted.removeprefix("bytes=").split("-")[0] or 0)
            status = 206
        body = data[start:]
        self.send_response(status)
        self.send_header("X-Repo-Commit", self.hub.faults.commit or sha)
        self.send_header("ETag", f'"{self.hub.faults.etag or hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        if not send_body:
            return
        drop = self.hub.take_drop(name)
        if drop is not None and drop < len(body):
            self.wfile.write(body[:drop])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # a dropped transfer: fewer bytes than announced
            return
        self.wfile.write(body)

    def _json(self, payload) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str | None, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]):
    """Serve ``handler`` on 127.0.0.1 in a thread; yields the base URL (``http://127.0.0.1:N``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def serve_hub(hub: Hub):
    """Serve ``hub`` on 127.0.0.1 in a thread; yields the endpoint (for ``HF_ENDPOINT``)."""
    with serve_handler(type("HubHandler", (_Handler,), {"hub": hub})) as endpoint:
        yield endpoint
