"""netsim's version (one place: setup.cfg reads it too) and the versions a run's numbers depend on."""
from __future__ import annotations

import platform
from importlib import metadata

__version__ = "0.1.0"

#: the packages whose arithmetic a run's numbers depend on, recorded in summary.json
NUMERIC_PACKAGES = ("torch", "numpy", "scipy")


def environment() -> dict[str, str]:
    """netsim's, Python's and :data:`NUMERIC_PACKAGES`' versions, and torch's CPU kernel level
    (e.g. ``AVX512``): a run is bit-identical to another with the same config, seed, thread
    count and these values (requirements.lock fixes the packages)."""
    import torch

    return {"netsim": __version__, "python": platform.python_version(),
            **{name: metadata.version(name) for name in NUMERIC_PACKAGES},
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
