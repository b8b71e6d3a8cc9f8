"""How a ``netsim`` command ends when something stops it: one line on stderr, never a traceback.

A bad input is an error (exit code 2). A failed read or write (disk full, a folder that vanished:
any OSError) and Ctrl-C (exit code 130) say what was kept and how to go on, as the command told
:func:`on_stop`. A closed stdout (``netsim analyze ... | head``) ends the command quietly (exit
code 141, as for a process stopped by SIGPIPE). Warnings (``warnings.warn``) are one
``netsim: warning:`` line each.
"""
from __future__ import annotations

import os
import sys
import warnings
from contextvars import ContextVar
from typing import Callable

from netsim.errors import ConfigError, one_line

EXIT_ERROR, EXIT_INTERRUPTED, EXIT_CLOSED_PIPE = 2, 130, 141

_ON_STOP: ContextVar[str] = ContextVar("netsim_on_stop", default="")


def on_stop(text: str) -> None:
    """What to say, from here on, if the command stops: what it keeps and how to go on."""
    _ON_STOP.set(text)


def _line(kind: str, text: str) -> None:
    print(one_line(f"netsim: {kind}{text}"), file=sys.stderr, flush=True)


def _warning(message, category, filename, lineno, file=None, line=None) -> None:
    if sys.stderr.isatty():                # clear a progress line (netsim.util.progress) first
        sys.stderr.write("\r\x1b[K")
    _line("warning: ", str(message))


def _then() -> str:
    return f"; {_ON_STOP.get()}" if _ON_STOP.get() else ""


def _os_error(exc: OSError) -> str:
    """``No space left on device (results/x/metrics.csv)``."""
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{what} ({exc.filename})" if exc.filename else what


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush raises nothing more."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):        # not a file (e.g. captured by a test)
        pass


def report(command: Callable[[], int]) -> int:
    """Run ``command`` (its exit code) with warnings as one line each, and end any failure as one
    line (module doc)."""
    token = _ON_STOP.set("")
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning
            code = command()
        sys.stdout.flush()                      # a closed pipe shows here, not at exit
        return code
    except ConfigError as exc:
        _line("error: ", str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        _line("", "interrupted" + _then())
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_CLOSED_PIPE
    except OSError as exc:
        _line("error: ", _os_error(exc) + _then())
        return EXIT_ERROR
    finally:
        _ON_STOP.reset(token)
