"""One seed drives every generator: independent named streams derived from the run's seed.

Streams (``topology``, ``links``, ``latency``, ``loss``, ``compute``, ``failures``, ``data``,
``init``, ``training``, ``algorithm``) are children of ``numpy.random.SeedSequence(seed)`` keyed by a
stable hash of their name, so changing one stream's seed (``stream_seeds: {links: 7}``) changes that
factor and nothing else.
"""
from __future__ import annotations

import zlib

import numpy as np
import torch

STREAMS = ("topology", "links", "latency", "loss", "compute", "failures", "data", "init",
           "training", "algorithm")


class Streams:
    """Named, independent random generators derived from one seed."""

    def __init__(self, seed: int, overrides: dict[str, int] | None = None):
        self.seed = int(seed)
        self.overrides = dict(overrides or {})

    def _entropy(self, name: str) -> list[int]:
        base = self.overrides.get(name, self.seed)
        return [int(base), zlib.crc32(name.encode())]

    def numpy(self, name: str) -> np.random.Generator:
        """A fresh ``numpy.random.Generator`` for stream ``name`` (same name, same sequence)."""
        return np.random.default_rng(np.random.SeedSequence(self._entropy(name)))

    def torch(self, name: str, device: str | torch.device = "cpu") -> torch.Generator:
        """A fresh ``torch.Generator`` on ``device`` for stream ``name``."""
        seed = int(np.random.SeedSequence(self._entropy(name)).generate_state(1, np.uint64)[0] >> 1)
        g = torch.Generator(device=device)
        g.manual_seed(seed)
        return g
