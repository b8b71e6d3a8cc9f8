"""Shared round structure of the gossip baselines (SGP, D-PSGD).

Per round every live node computes E local SGD steps on its de-biased model while it sends its
pre-step state to its out-neighbours (the exchange starts at the round start, overlapping the
computation). A mixing matrix ``D[i, j]`` (receiver-major) built from the realised links and the
deliveries then combines the pre-step states, and each node adds its own local displacement:
``z_i <- sum_j D_ij z_j + (x_i^{after} - x_i^{before})`` (Nedić–Olshevsky / D-PSGD form).
"""
from __future__ import annotations

import numpy as np
import torch

from algorithms.base import Algorithm
from netsim.runtime.scratch import Scratch
from netsim.sim.facade import ExchangeResult


class Gossip(Algorithm):
    """Base class: the compute and exchange phases of a round (:meth:`step`); subclasses mix."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bank = self.new_bank()
        self._work = Scratch()                  # the pre-step copy, then the displacements

    def requests(self, t: int) -> np.ndarray:
        """What every node sends this round: ``bool[E]`` over the base graph's edges
        (``Network.edges``; here all of them) or a matrix ``request[dst, src]``."""
        return np.ones(len(self.net.edges), bool)

    def payload_bytes(self) -> float:
        return float(self.bank.size_bytes)

    def step(self, t: int) -> tuple[ExchangeResult, torch.Tensor]:
        """Compute and exchange phases of round t; returns the exchange and each displacement
        (written over the pre-step copy, a work buffer kept for the next round)."""
        t0 = self.net.now
        comp = self.compute_phase(active=self.net.alive())
        done = comp.finished
        before = self._work.like(self.bank.flat).copy_(self.bank.flat)
        self.local_sgd(self.bank, self.train.local_steps, clients=self.index(done, self.device))
        delta = torch.sub(self.bank.flat, before, out=before)
        req = self.requests(t)
        req = req & (done[self.net.edges.src] if req.ndim == 1 else done[None, :])
        ex = self.exchange(req, self.payload_bytes(), ready=np.full(self.n, t0))
        return ex, delta
