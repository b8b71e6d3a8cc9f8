"""The local sweep pool's start method, kept free of heavy imports so that ``netsim sweep`` can
start the pool's fork server before it imports torch itself (the two imports then overlap)."""
from __future__ import annotations

import os
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path

#: what the local pool's workers need for a run, imported once in the fork server they start
#: from (torch, netsim, every registered component), so a worker starts in milliseconds
WORKER_PRELOAD = ["netsim.running.sweep", "netsim.scenario.memory", "netsim.analysis.graphs",
                  "algorithms", "topologies"]


def pool_context() -> BaseContext:
    """The local pool's start method: a fork server that imported :data:`WORKER_PRELOAD` (started
    once per process, then reused by every pool), else spawn (each worker imports netsim)."""
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(WORKER_PRELOAD)
    return ctx


def start_early(sweep_file: str | Path, workers: int | None) -> bool:
    """Start the fork server now if the sweep will run in the local pool with more than one
    worker (``workers``: ``--workers``, else the file's ``executor``; ``--set`` overrides are not
    read, so a guess they overturn only leaves an idle server). Returns whether it started."""
    import yaml

    try:
        executor = (yaml.safe_load(Path(sweep_file).read_text()) or {}).get("executor") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        return False                        # Sweep.load reports what is wrong with the file
    workers = workers or executor.get("workers") or os.cpu_count() or 1
    if executor.get("name", "local") != "local" or workers < 2:
        return False
    ctx = pool_context()
    if ctx.get_start_method() != "forkserver":
        return False
    from multiprocessing import forkserver
    forkserver.ensure_running()
    return True
