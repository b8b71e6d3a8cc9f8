"""Worker processes that end with their parent (a sweep's pool workers).

When a ``netsim sweep`` parent is killed (``kill -9``), its pool workers would otherwise finish
their queued runs and then block on the pool's pipe forever. :func:`exit_with_parent`, the pool's
initializer, asks Linux to kill the worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``) and
starts a watchdog thread that exits the worker once its parent is gone (other systems, and the
window before ``prctl`` took effect).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
#: seconds between two checks of the watchdog
POLL_S = 1.0


def _parent_gone(parent: int) -> bool:
    return os.getppid() != parent


def _watch(parent: int) -> None:
    while not _parent_gone(parent):
        time.sleep(POLL_S)
    os._exit(1)


def exit_with_parent(parent: int) -> None:
    """End this process when process ``parent`` (its parent at start) dies."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):        # no prctl: the watchdog alone
            pass
    if _parent_gone(parent):                     # died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watch").start()
