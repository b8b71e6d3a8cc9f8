"""Test-suite settings: one torch thread per process, set before torch is imported and as
netsim's default (netsim.util.threads.DEFAULT_THREADS), so that the suite stays fast and its timings
stable when other processes share the CPU (benchmarks/README.md, "Threads"); this folder on ``sys.path`` under any ``--import-mode``, for the scenarios and helpers
several test files share (helpers.py: ``from helpers import TINY, tiny, build, play, ...``)."""
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

import torch  # noqa: E402

torch.set_num_threads(1)

import netsim.util.threads  # noqa: E402

netsim.util.threads.DEFAULT_THREADS = 1
