"""The exclusive lock a process holds on a run folder while it writes it."""

from __future__ import annotations

import os
from pathlib import Path

from biaslens.errors import BiaslensError
from biaslens.store.paths import ANOTHER_OUTPUT, inside_run

LOCK_FILE = ".lock"


class RunLock:
    """An exclusive lock on a run folder (``.lock``, ``flock``), released when the process
    ends, however it ends; a run that finishes removes the file. Without ``fcntl`` (Windows)
    there is no lock."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root) / LOCK_FILE
        self._handle = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return
        inside_run(self.path.parent, LOCK_FILE)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            descriptor = os.open(self.path, flags, 0o666)
        except IsADirectoryError:
            raise BiaslensError(
                f"{self.path} is a folder; the run's lock file cannot be taken (remove it)"
            ) from None
        except OSError as error:  # ELOOP: a link raced in after the check
            raise BiaslensError(
                f"cannot take the run's lock {self.path}: {error.strerror or error}"
            ) from None
        handle = os.fdopen(descriptor, "r+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            handle.close()
            raise BiaslensError(
                f"{self.path.parent} is in use by another biaslens process (pid {holder}); wait "
                f"for it to finish, or {ANOTHER_OUTPUT}"
            ) from None
        try:
            same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(descriptor).st_ino
        except OSError:
            same = False
        if not same:  # the holder removed the file as it finished: take the new one
            handle.close()
            return self.acquire()
        try:  # the holder's pid, for the message a second process gets
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
        except OSError:  # a full disk: the lock holds all the same, without the pid
            pass
        self._handle = handle

    def release(self) -> None:
        """Remove the lock file (while still holding it: a process that opened it meanwhile
        sees that it no longer names the file and takes a new one) and release the lock."""
        if self._handle is not None:
            try:
                self.path.unlink(missing_ok=True)
            except OSError:  # a read-only folder: the file stays, the lock goes all the same
                pass
            self._handle.close()  # closing the descriptor releases the flock
            self._handle = None
