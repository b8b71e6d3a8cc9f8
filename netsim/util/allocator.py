"""glibc's malloc with fixed thresholds for the hot path's large temporaries (glibc only).

torch takes CPU tensors from glibc's malloc. A block above the mmap threshold (128 kB at start,
raised as such blocks are freed, up to 32 MB) is fresh pages from the kernel, and free memory at
the top of the heap above the trim threshold (twice the mmap threshold) is given back: a training
step whose gradients and temporaries (megabytes at N = 100, tens of megabytes at N = 1,000) fall
on the wrong side of these moving thresholds pays a page fault per 4 kB on every step, and which
side they fall on depends on the process's history. Measured on bench_peer's FedAvg (50 rounds,
6 processes each): 5.9-6.5 ms per round in some processes and 8.1-9.1 ms in others with glibc's
defaults, 5.7-6.5 ms in every process with the thresholds fixed; SGP at N = 1,000 (bench_scale)
0.051 -> 0.042 s per round at 519 -> 528 MB peak; scenarios/scale_10k.yaml 3.19 -> 2.99 GB peak.
A user's ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` is left as it is.
"""
from __future__ import annotations

import ctypes
import os

#: blocks below this come from the heap (reused, no fresh pages)
MMAP_THRESHOLD = 64 << 20
#: free memory at the top of the heap is given back above this
TRIM_THRESHOLD = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3        # mallopt parameters, <malloc.h>


def tune_malloc() -> bool:
    """Fix glibc's mmap and trim thresholds for this process (idempotent); whether it did (not
    on another C library, nor where the user set either threshold)."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or os.environ.get("MALLOC_TRIM_THRESHOLD_"):
        return False
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        return False
    if not glibc.startswith("glibc"):
        return False
    libc = ctypes.CDLL(None)
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
