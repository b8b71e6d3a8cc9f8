"""torch's CPU threads for a run: ``--threads``, the scenario's ``threads:`` or netsim's default.

netsim's batched steps are small, so extra intra-op threads gain little on a quiet machine and
lose a lot on a shared one, where a thread that waits for a busy core stalls every step. The
default was chosen from the measurement in benchmarks/README.md ("Threads").
"""
from __future__ import annotations

from netsim.errors import ConfigError

#: torch intra-op threads when neither --threads nor the scenario's threads: is given
DEFAULT_THREADS = 1


def use_threads(threads: int | None = None) -> int:
    """Set torch's intra-op (and, where torch still allows it, inter-op) threads of this process
    to ``threads`` (None: :data:`DEFAULT_THREADS`); return the number set."""
    import torch

    n = DEFAULT_THREADS if threads is None else threads
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError("threads", n, "an int >= 1 or null")
    torch.set_num_threads(n)
    if torch.get_num_interop_threads() != n:
        try:
            torch.set_num_interop_threads(n)
        except RuntimeError:         # only before the first inter-op work of the process
            pass
    return n
