"""Where benchmark files come from: pinned public URLs with sha256, or a local copy.

``biaslens datasets download NAME`` fetches a dataset's files from their repository pinned to
a commit, checks each sha256 and stores them under the data dir (default: the user cache dir).
``--data-dir`` or ``BIASLENS_DATA_DIR`` point at a local copy instead; the layout is
``DATA_DIR/NAME/FILE`` (the layout of the project's shared dataset folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from biaslens.common import atomic
from biaslens.common.files import read_text
from biaslens.common.hashing import sha256_file as _sha256_file
from biaslens.common.paths import cache_root
from biaslens.errors import BiaslensError

PACKAGE_FILES = Path(__file__).resolve().parent / "files"
"""Data files shipped inside the package (templates, name lists, lexicons)."""

ENV_DATA_DIR = "BIASLENS_DATA_DIR"


@dataclass(frozen=True)
class RemoteDataset:
    name: str
    base_url: str  # pinned to a commit
    files: dict[str, tuple[str, str]]  # local name -> (path under base_url, sha256)
    license: str


@dataclass(frozen=True)
class RemoteArchive:
    """Many files of one repository at a commit: its tarball, of which ``members`` (folders)
    are kept; verified by ``tree_sha256``, the sha256 of the sorted lines
    ``"<path>\t<sha256 of the file>\n"`` of every kept file."""

    name: str
    url: str
    members: tuple[str, ...]
    tree_sha256: str
    files: int
    license: str


MANIFEST = PACKAGE_FILES / "sources.yaml"
"""The pinned URLs, sha256s and licenses of every remote dataset (a data file, not code)."""


def _read_manifest(path: Path = MANIFEST):
    manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    remote = {
        name: RemoteDataset(
            name,
            entry["base_url"],
            {
                local: (local, value)
                if isinstance(value, str)
                else (value["path"], value["sha256"])
                for local, value in entry["files"].items()
            },
            entry["license"],
        )
        for name, entry in manifest["datasets"].items()
    }
    archives = {
        name: RemoteArchive(
            name,
            entry["url"],
            tuple(entry["members"]),
            entry["tree_sha256"],
            int(entry["files"]),
            entry["license"],
        )
        for name, entry in manifest["archives"].items()
    }
    return remote, archives


REMOTE, ARCHIVES = _read_manifest()
SIB_COMMIT = ARCHIVES["sib-outputs"].url.rsplit("/", 1)[-1]
"""2dot71mily/sib_paper, the SIB paper's reference code and released outputs (no license: its
files are fetched for the user's own use, never shipped with biaslens)."""
VERIFIED = ".biaslens-verified"


def tree_sha256(folder: Path) -> tuple[str, int]:
    """The archive check of :class:`RemoteArchive` over every file below ``folder``."""
    digest = hashlib.sha256()
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.name != VERIFIED)
    for path in files:
        line = f"{path.relative_to(folder).as_posix()}\t{_sha256_file(path)}\n"
        digest.update(line.encode())
    return digest.hexdigest(), len(files)


def data_dir(explicit: Path | str | None = None) -> Path:
    """``explicit`` if given, else ``$BIASLENS_DATA_DIR``, else the user cache dir."""
    if explicit is not None:
        return Path(explicit)
    if os.environ.get(ENV_DATA_DIR):
        return Path(os.environ[ENV_DATA_DIR])

    return cache_root() / "datasets"


def locate(name: str, explicit: Path | str | None = None) -> Path:
    """The folder holding dataset ``name``'s files; a clear error says how to get them."""
    if name in ARCHIVES:
        folder = data_dir(explicit) / name
        if not (folder / VERIFIED).is_file():
            raise BiaslensError(
                f"dataset {name!r} not found in {folder}: run `biaslens datasets download "
                f"{name}`, or pass --data-dir / set {ENV_DATA_DIR} to a folder holding {name}/"
            )
        return folder
    if name not in REMOTE:
        raise BiaslensError(f"unknown dataset {name!r}; known: {', '.join([*REMOTE, *ARCHIVES])}")
    folder = data_dir(explicit) / name
    missing = [f for f in REMOTE[name].files if not (folder / f).is_file()]
    if missing:
        raise BiaslensError(
            f"dataset {name!r} not found in {folder} (missing {', '.join(missing)}): run "
            f"`biaslens datasets download {name}`, or pass --data-dir / set {ENV_DATA_DIR} to a "
            f"folder holding {name}/{missing[0]}"
        )
    return folder


def read_json(path: Path | str, what: str):
    """Parse a JSON file; a missing file or bad JSON is an error naming ``what`` / file:line."""
    path = Path(path)
    text = read_text(path, what, max_line=None)  # JSON may hold a whole file on one line
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise BiaslensError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    except RecursionError:
        raise BiaslensError(f"{path}: JSON nested too deeply") from None


def sha256_file(path: Path) -> str:
    """The file's sha256; a missing file or a folder is a clear error."""
    path = Path(path)
    if not path.is_file():
        raise BiaslensError(
            f"{path}: file not found" if not path.exists() else f"{path}: not a file"
        )
    return _sha256_file(path)


def download_archive(spec: RemoteArchive, folder: Path, url: str | None = None) -> Path:
    """Fetch a pinned tarball, keep its ``members``, check the tree hash, then mark it
    verified; a mismatch leaves nothing behind."""
    url = url or spec.url
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}-", dir=folder.parent))
    try:
        archive = staging / "archive.tar.gz"
        try:
            with urllib.request.urlopen(url, timeout=120) as response, open(archive, "wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as error:
            raise fetch_failed(url, spec.name, error) from None
        kept = staging / "kept"
        try:
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    path = member.name.split("/", 1)[1] if "/" in member.name else ""
                    if not member.isfile() or not path.startswith(
                        tuple(m + "/" for m in spec.members)
                    ):
                        continue
                    target = kept / path
                    if ".." in Path(path).parts:
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as source, open(target, "wb") as out:
                        shutil.copyfileobj(source, out)
        except tarfile.TarError as error:
            raise BiaslensError(f"{url}: not a readable tar.gz archive ({error})") from None
        actual, count = tree_sha256(kept) if kept.exists() else ("", 0)
        if actual != spec.tree_sha256:
            raise BiaslensError(
                f"{url}: the {count} extracted files do not match the pinned tree sha256 "
                f"({actual or 'no files'} != {spec.tree_sha256})"
            )
        (kept / VERIFIED).write_text(spec.tree_sha256)
        if folder.exists():
            shutil.rmtree(folder)
        kept.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def fetch_failed(url: str, name: str, error: OSError) -> BiaslensError:
    """A download that failed, in one line with what works without the network: a local copy
    of the public sets given by ``--data-dir`` or ``$BIASLENS_DATA_DIR``."""
    reason = getattr(error, "reason", None) or error
    return BiaslensError(
        f"cannot fetch {url} ({reason}); offline, point biaslens at a local copy of the public "
        f"sets holding {name}/ with --data-dir DIR or {ENV_DATA_DIR}=DIR"
    )


def download(name: str, explicit: Path | str | None = None, base_url: str | None = None) -> Path:
    """Fetch dataset ``name`` (pinned URLs), verify every sha256, store atomically."""
    if name in ARCHIVES:
        return download_archive(ARCHIVES[name], data_dir(explicit) / name, base_url)
    if name not in REMOTE:
        raise BiaslensError(f"unknown dataset {name!r}; known: {', '.join(REMOTE)}")
    spec = REMOTE[name]
    folder = data_dir(explicit) / name
    for local, (remote, expected) in spec.files.items():
        url = f"{(base_url or spec.base_url).rstrip('/')}/{remote}"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                payload = response.read()
        except OSError as error:
            raise fetch_failed(url, name, error) from None
        actual = hashlib.sha256(payload).hexdigest()
        if actual != expected:
            raise BiaslensError(f"{url}: sha256 {actual} does not match the pinned {expected}")
        atomic.write_bytes(folder / local, payload)
    return folder
