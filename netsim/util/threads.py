"""torch's CPU threads for a run: ``--threads``, the scenario's ``threads:`` or netsim's default,
one thread per core whose idle OpenMP threads spin only briefly before they sleep.

torch's own default (one thread per core; libgomp lets a waiting thread spin for 300,000
iterations) is fastest on a quiet machine, but when other processes hold the cores every
parallel region waits for a thread that is not running, and a run was 6-30x slower. With a short
spin (``GOMP_SPINCOUNT=10000``, which ``import netsim`` puts in the environment before torch is
loaded, unless it is set already) the same threads were as fast as torch's default on a quiet
machine and 5-30x faster with two busy processes beside them (benchmarks/README.md, "Threads").

The count is fixed for a run and recorded in summary.json. It is capped at the cores (10,000
threads crashed torch), and it does not follow the machine's load, because for CNNs it changes
results in their last bits (MLP scenarios are bit-identical for 1 and 2 threads, a CNN on
stand-in CIFAR-100 was not); a run started on a busy machine says so and suggests
``--threads 1`` instead (:func:`warn_if_busy`). Results are bit-identical for the same thread
count; give ``threads:`` in a scenario to reproduce it on a machine with at least that many
cores.
The short spin needs netsim imported before torch (a script that imports torch first can set
``GOMP_SPINCOUNT=10000`` in its environment).
"""
from __future__ import annotations

import os
import warnings

from netsim.errors import ConfigError

#: libgomp's spin before a waiting thread sleeps (iterations), set unless the user set one
SPIN_COUNT = "10000"
os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)

#: threads when neither --threads nor the scenario's threads: is given; None: the environment's
#: ``OMP_NUM_THREADS`` if set, else :func:`cores` (the test suite sets 1)
DEFAULT_THREADS: int | None = None


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_threads() -> int:
    """:data:`DEFAULT_THREADS`, else ``OMP_NUM_THREADS`` (a positive int), else :func:`cores`."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    return DEFAULT_THREADS or (int(env) if env.isdigit() and int(env) > 0 else cores())


def capped(threads: int, limit: int, field: str, why: str) -> int:
    """``threads``, or ``limit`` with a one-line warning naming ``field`` and ``why`` (the cores,
    or their share) when ``threads`` is above it."""
    if threads <= limit:
        return threads
    warnings.warn(f"{field}: {threads} threads capped at {limit}, {why}", RuntimeWarning,
                  stacklevel=3)
    return limit


def choose(threads: int | None = None) -> int:
    """A run's thread count: ``threads`` (None: :func:`default_threads`), checked, and capped at
    :func:`cores` (with a warning)."""
    n = threads if threads is not None else default_threads()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError("threads", n, "an int >= 1 or null")
    return capped(n, cores(), "threads", f"the {cores()} cores of this machine")


def warn_if_busy(threads: int, runs: int = 1) -> None:
    """Warn (one line, suggesting ``--threads 1``) when other processes keep the machine busy as
    ``runs`` parallel runs of ``threads`` threads each start: more than one thread per run, a
    load average of at least 1 over the last minute, and fewer idle cores than their threads."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):                  # no load average on this system
        return
    if threads > 1 and load >= 1 and threads * runs > cores() - load:
        warnings.warn(f"the machine is busy (load average {load:.1f} on {cores()} cores): "
                      f"{threads} torch threads per run will wait for each other; --threads 1 "
                      "may be much faster", RuntimeWarning, stacklevel=2)


def use_threads(threads: int | None = None) -> int:
    """Set torch's intra-op (and, where torch still allows it, inter-op) threads of this process
    to ``threads`` (None: :func:`default_threads`; capped: :func:`choose`); return the number
    set."""
    import torch

    n = choose(threads)
    torch.set_num_threads(n)
    if torch.get_num_interop_threads() != n:
        try:
            torch.set_num_interop_threads(n)
        except RuntimeError:         # only before the first inter-op work of the process
            pass
    return n
