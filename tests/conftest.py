"""Test-suite settings: one torch thread per process (as netsim's default), set before torch is
imported, so that the suite stays fast when other processes share the CPU (benchmarks/README.md,
"Threads")."""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(1)
