"""Per-client mini-batch streams: client i's k-th batch depends on (seed, i, k) only.

A counter-based draw (SplitMix64 finaliser, Steele, Lea & Flood 2014, of the chained key
seed -> client -> step -> sample) replaces a shared generator, so which clients share a batched
call, and in which order the calls come, cannot change what a client draws: what the event-driven
engine's batched and reference modes need (docs/async.md).
"""
from __future__ import annotations

import numpy as np
import torch

from netsim.data import ClientData

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function of ``z + gamma`` (uint64, wrapping)."""
    z = z + _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def uniforms(seed: int, clients: np.ndarray, steps: np.ndarray, size: int) -> np.ndarray:
    """float64 ``[M, size]`` in [0, 1): the draws of each client's step (53-bit resolution)."""
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed) ^ _mix(np.asarray(clients, np.uint64)))
        key = _mix(key ^ np.asarray(steps, np.uint64))
        z = _mix(key[:, None] ^ np.arange(size, dtype=np.uint64)[None, :])
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


class ClientStreams:
    """Training batches of ``data`` for any clients, each from its own counter stream."""

    def __init__(self, data: ClientData, seed: int, batch_size: int):
        self.data, self.seed, self.batch_size = data, int(seed), batch_size
        self.n_train = data.n["train"].cpu().numpy()

    def batch(self, clients: np.ndarray, steps: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch number ``steps[m]`` of each listed client ``clients[m]``: ``x[M, B, ...]``,
        ``y[M, B, ...]``, uniform with replacement among its training rows, as
        ``ClientData.sample_batch``."""
        clients = np.asarray(clients, np.int64)
        u = uniforms(self.seed, clients, steps, self.batch_size)
        pick = np.minimum((u * self.n_train[clients, None]).astype(np.int64),
                          np.maximum(self.n_train[clients, None] - 1, 0))
        dev = self.data.device
        return self.data.gather("train", torch.as_tensor(clients, device=dev),
                                torch.as_tensor(pick, device=dev))
