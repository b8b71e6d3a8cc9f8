"""Worker processes that end with the sweep that started them (a sweep's pool workers).

When a ``netsim sweep`` parent is killed (``kill -9``), its pool workers would otherwise finish
their queued runs and then block on the pool's pipe forever. The workers are forked from
multiprocessing's fork server (netsim.running.sweep), which lives as long as any worker, so neither
the parent-death signal (``prctl(PR_SET_PDEATHSIG)``) nor ``getppid`` sees the sweep die:
:func:`exit_with_parent`, the pool's initializer, starts a watchdog thread that waits for the
sweep's process itself to end (a Linux pidfd; elsewhere a check every second) and then exits the
worker.
"""
from __future__ import annotations

import os
import select
import threading
import time

#: seconds between two checks where there is no pidfd
POLL_S = 1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:                      # another user's process of that id
        pass
    return True


def _wait(pid: int) -> None:
    """Return once process ``pid`` has ended."""
    try:
        fd = os.pidfd_open(pid)                  # readable once the process has ended
    except ProcessLookupError:
        return
    except (AttributeError, OSError):            # no pidfd (not Linux, or Linux before 5.3)
        while _alive(pid):
            time.sleep(POLL_S)
        return
    select.select([fd], [], [])


def _watch(parent: int) -> None:
    _wait(parent)
    os._exit(1)


def exit_with_parent(parent: int) -> None:
    """End this process when process ``parent`` (the sweep that started the pool) ends."""
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="parent-watch").start()
