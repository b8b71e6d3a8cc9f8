"""One writer per results folder: an OS lock on ``FOLDER/.netsim.lock``, held for a whole run (or
sweep), whose text names its holder (JSON: pid, host, start time, command).

The lock is ``fcntl.flock`` on that file, so the kernel releases it when its process ends in any
way (kill -9 included): a later writer then gets it at once, finds the text of a holder that no
longer holds it (a stale lock) and takes it over (:attr:`FolderLock.stale`). A lock released
normally removes the file. Within one thread of a process, holding a folder's lock again is
allowed (counted): the Python API's ``run_sweep`` holds its sweep folder around
``netsim.running.sweep.run_sweep``, which holds it too.
"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import socket
import sys
import threading
import time
from pathlib import Path

from netsim.errors import ConfigError

LOCK = ".netsim.lock"
#: longest command kept in a holder's description (an error line stays short)
COMMAND_CHARS = 160

_held: dict[str, list[int]] = {}   # real path of a held lock file -> [fd, holds, thread id]


def _holder() -> str:
    """This process as a holder: one line of JSON."""
    command = shlex.join([Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python",
                          *sys.argv[1:]])
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                       "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "command": command})


def describe(text: str) -> str:
    """A holder's text as ``pid P on HOST since TIME (COMMAND)``."""
    try:
        h = json.loads(text)
        who = f"pid {int(h['pid'])} on {h['host']} since {h['started']}"
        command = " ".join(str(h["command"]).split())           # one line
    except (ValueError, TypeError, KeyError):
        return "a process that left no details"
    if len(command) > COMMAND_CHARS:
        command = command[:COMMAND_CHARS - 3] + "..."
    return f"{who} ({command})"


def _text(fd: int) -> str:
    return os.pread(fd, 1 << 16, 0).decode(errors="replace").strip()


def _acquire(path: Path, field: str) -> tuple[int, str]:
    """Lock ``path`` (created if missing) for this process: (its descriptor, the text it held);
    ConfigError naming the holder when another process has it."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise ConfigError(field, str(path.parent), "a folder netsim can lock",
                              f"{LOCK}: {exc.strerror or type(exc).__name__}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = describe(_text(fd))
            os.close(fd)
            raise ConfigError(field, str(path.parent), "a folder no other netsim run or sweep "
                              "is writing", f"held by {holder}") from None
        except OSError as exc:
            os.close(fd)
            raise ConfigError(field, str(path.parent), "a folder netsim can lock",
                              f"{LOCK}: {exc.strerror or type(exc).__name__}") from None
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd, _text(fd)
        os.close(fd)            # its holder released and removed it meanwhile: lock the new one


class FolderLock:
    """The lock of the existing folder ``folder``, held from construction to :meth:`release`
    (ConfigError on ``field`` while another process holds it). ``stale``: a line saying that
    the lock was taken over from a process that ended without releasing it, else None."""

    def __init__(self, folder: Path, field: str = "results folder"):
        self.path = Path(folder) / LOCK
        self.key = os.path.realpath(self.path)
        self.stale: str | None = None
        self.holding = True
        mine = _held.get(self.key)
        if mine is not None and mine[2] == threading.get_ident():
            mine[1] += 1
            return
        fd, previous = _acquire(self.path, field)
        if previous:
            self.stale = (f"took over the lock of {folder} left by {describe(previous)}, which "
                          "no longer runs (killed?)")
        os.ftruncate(fd, 0)
        os.pwrite(fd, (_holder() + "\n").encode(), 0)
        _held[self.key] = [fd, 1, threading.get_ident()]

    def release(self) -> None:
        """Let the folder go (the last release of this process removes the lock file)."""
        mine = _held.get(self.key)
        if not self.holding or mine is None:
            return
        self.holding = False
        mine[1] -= 1
        if mine[1] == 0:
            del _held[self.key]
            self.path.unlink(missing_ok=True)
            os.close(mine[0])

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()
