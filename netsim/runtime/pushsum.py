"""Push-sum over realised directed links, with running-sum recovery of lost mass.

Push-sum (Kempe et al. 2003; Nedić & Olshevsky 2016; Assran et al. 2019): node j splits its
biased state ``z_j`` and its weight ``w_j`` over its realised out-links and itself with the
column-stochastic ``P[i, j] = p_{j->i}``; receivers add what arrives and de-bias ``x = z / w``.
In the papers every pushed share arrives (``z <- P z``, ``w <- P w``, so ``sum z`` and ``sum w``
are conserved). A lost, blocked or late message takes its share with it (``loss_recovery:
none``: ``z <- (P * delivered) z``): the total mass decays geometrically and ``z / w`` drifts.

Running sums (Hadjicostis, Domínguez-García & Vaidya, IEEE TAC 2016, ``loss_recovery:
running_sums``): sender j keeps ``sigma_{j->i}``, the cumulative mass it ever pushed on edge
j->i, and every message carries it; receiver i keeps ``rho_{i<-j}``, the last running sum it
consumed, and adds ``sigma_{j->i} - rho_{i<-j}`` when a message gets through. A missed message
is then only delayed: its share arrives with the next message that gets through on that edge,
and a late copy older than one already consumed adds nothing. ``sum z + in-flight`` and
``sum w + in-flight`` are conserved exactly.

Implementation: the simulation knows both ends, so it keeps ``sigma - rho`` per edge (the mass in
flight) instead of two unbounded running sums whose float32 difference would lose precision
over long runs; the receiver's arithmetic is the same. Only edges that currently hold mass are
stored, each in a row of a pool tensor (sorted keys ``dst * N + src`` and their rows; a step
touches only the rows of its arrivals and its missed shares, and freed rows are reused; the pool
doubles when full): memory is up to ``2 H (d + 1)`` floats with H at most the number of edges of
the base graph (about ``loss x E`` under i.i.d. loss; on the complete graph at most
``N (N - 1) (d + 1)`` floats). Messages keep their size:
``d + 1`` floats, the running sums instead of the shares.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from netsim.runtime.mixing import mix_entries
from netsim.runtime.scratch import Scratch
from netsim.schema import Field

LOSS_RECOVERY = ("running_sums", "none")

#: dtype of the push-sum weights w (always) and, by default (``state_dtype``), of the state z and
#: the mass in flight. In float32 the rounding of each combination accumulates: after 2,000 lossy
#: steps the total weight is off by ~1e-5 and the de-biased values by ~2e-5 of their scale;
#: float64 keeps both below 1e-9.
STATE_DTYPE = torch.float64

#: A draining node's weight is rescaled to 1 (with its z) below this: far above float64's
#: underflow, far below any weight a node that still receives mass has.
RESCALE_BELOW = 1e-20

#: The options of every push-sum algorithm (SGP, PDBO's inner SGP, D-PSGD's push-sum variant).
PUSH_SUM_FIELDS = {
    "loss_recovery": Field("str", "running_sums", "running_sums: the mass of a lost, blocked or "
                           "late message arrives with the next message on that edge (Hadjicostis "
                           "et al. 2016); none: the papers' idealised push-sum, the mass is lost",
                           choices=LOSS_RECOVERY),
    "min_weight": Field("float", 0.5, "a local step enters x_i = z_i / w_i as delta_i / "
                        "max(w_i, min_weight): caps the 1/w_i amplification of the Nedic form at "
                        "nodes with little mass (sparse or not strongly connected graphs); 0 = "
                        "the exact form", lo=0.0, hi=1.0),
    "state_dtype": Field("str", "float64", "dtype of the push-sum state z and of the mass in "
                         "flight (the weights w stay float64): float64 keeps sum z exact to "
                         "~1e-9 over thousands of lossy steps; float32 halves the memory traffic "
                         "of mixing (de-biased models off by ~2e-5 of their scale after 2,000 "
                         "lossy steps, far below one SGD step)", choices=("float64", "float32")),
}


@dataclass(frozen=True)
class GraphCheck:
    """What the graph of possible links means for push-sum (:func:`check_graph`)."""

    n: int
    components: int            # strongly connected components
    without_in_links: int      # nodes no link can ever reach
    draining: np.ndarray       # bool [N]: nodes outside the sink components (those with no
                               # way out): their mass flows on downstream and decays to 0

    def warning(self) -> str | None:
        """Why push-sum cannot reach consensus here, or None on a strongly connected graph."""
        if self.components == 1:
            return None
        return (f"the graph is not strongly connected ({self.components} strongly connected "
                f"components) and leaves {self.without_in_links} of {self.n} nodes without "
                f"in-links: push-sum cannot reach consensus there")


def check_graph(reachable: np.ndarray) -> GraphCheck:
    """Strong components of the directed graph ``reachable[src, dst]`` (the base graph's edges
    that can ever be up) and the nodes whose push-sum weight decays to 0: every node outside
    a sink component, since all mass ends up in the components nothing leaves."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    adj = np.asarray(reachable, bool) & ~np.eye(len(reachable), dtype=bool)
    parts, label = connected_components(csr_matrix(adj), directed=True, connection="strong")
    src, dst = np.nonzero(adj)
    across = label[src] != label[dst]
    feeds = np.zeros(parts, bool)
    feeds[label[src[across]]] = True
    return GraphCheck(len(adj), int(parts), int((~adj.any(axis=0)).sum()), feeds[label])


class PushSum:
    """One push-sum combination per call, for states ``[N, d_k]`` pushed together (z and w).

    ``recovery``: ``running_sums`` (mass of missed messages arrives later) or ``none`` (the
    papers' idealised push-sum: mass of missed messages is lost).

    ``min_weight`` (:meth:`step_scale`): in the Nedić form a local step ``delta_i`` added to
    ``z_i`` moves ``x_i`` by ``delta_i / w_i``; weights legitimately dip far below 1 on sparse
    directed graphs (to 1e-4 on a lossy Bernoulli ring, which then recovers) and the amplified
    steps blow the models up. The step is scaled so that it moves x_i by at most ``delta_i /
    min_weight``; ``z`` and ``w`` themselves stay exact.

    ``draining`` (``GraphCheck.draining``): on a graph that is not strongly connected, the nodes
    outside the sink components, whose weight decays geometrically to 0 (as (k + 1)^-t for a
    node without in-links and k out-links). Before it underflows (below :data:`RESCALE_BELOW`)
    such a node's ``(z_i, w_i)`` are rescaled together to ``w_i = 1``: exact for its ratio
    ``x_i = z_i / w_i``; the added mass is counted in ``rescaled``. Strongly connected graphs
    have no draining node.
    """

    def __init__(self, n: int, recovery: str = "running_sums", min_weight: float = 0.5,
                 draining: np.ndarray | None = None, state_dtype: str = "float64"):
        self.n, self.recovery, self.min_weight = n, recovery, min_weight
        self.dtype = getattr(torch, state_dtype)
        self.draining = None if draining is None or not np.any(draining) else \
            torch.as_tensor(np.asarray(draining, bool))
        self._last = (np.arange(n) * (n + 1), np.ones(n))      # the identity's entries
        self.rescaled = 0
        self._scratch = Scratch()
        self.reset()

    @classmethod
    def from_params(cls, n: int, hp, draining: np.ndarray | None = None) -> "PushSum":
        """From an algorithm's typed parameters that include :data:`PUSH_SUM_FIELDS`."""
        return cls(n, hp.loss_recovery, hp.min_weight, draining, hp.state_dtype)

    def fresh_weights(self, device: torch.device | str = "cpu") -> Tensor:
        """Initial push-sum weights ``w = 1``, ``[N, 1]`` in :data:`STATE_DTYPE`."""
        return torch.ones(self.n, 1, dtype=STATE_DTYPE, device=device)

    @staticmethod
    def debias(z: Tensor, w: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
        """The de-biased models ``x = z / w`` in the models' ``dtype``."""
        return (z / w).to(dtype)

    def debias_into(self, models: Tensor, z: Tensor, w: Tensor) -> Tensor:
        """:meth:`debias` written into ``models`` through a work buffer (in z's dtype)."""
        return models.copy_(torch.div(z, w.to(z.dtype), out=self._scratch.like(z)))

    def add_step(self, z: Tensor, delta: Tensor, w: Tensor) -> Tensor:
        """``z += delta * step_scale(w)`` in place: a Nedić-form local step ``delta`` (in the
        models' dtype, scaled in place) added in z's dtype through a work buffer."""
        step = delta.mul_(self.step_scale(w, delta.dtype))
        return z.add_(self._scratch.like(z).copy_(step))

    def bias(self, x: Tensor, w: Tensor) -> Tensor:
        """The push-sum state ``z = x w`` of models ``x``, in ``state_dtype``."""
        return x.to(self.dtype) * w.to(self.dtype)

    def step_scale(self, w: Tensor, dtype: torch.dtype) -> Tensor:
        """``min(1, w_i / min_weight)`` per node, ``[N, 1]``: the factor on a Nedić-form local
        step so that it moves ``x_i`` by at most ``delta_i / min_weight``."""
        if self.min_weight <= 0:
            return torch.ones_like(w, dtype=dtype)
        return torch.clamp(w / self.min_weight, max=1.0).to(dtype)

    def reset(self) -> None:
        """Forget the mass in flight (a new push-sum run from fresh states)."""
        self.keys = np.empty(0, np.int64)      # the edges holding mass, sorted
        self.slots = np.empty(0, np.int64)     # their rows in the pools
        self.pool: list[Tensor] = []           # per state [capacity, d_k]; free rows are stale
        self.free = np.empty(0, np.int64)      # rows of the pools not in use

    @property
    def held(self) -> list[Tensor]:
        """The mass in flight per state, ``[H, d_k]`` rows in the order of ``keys``."""
        rows = torch.as_tensor(self.slots, device=self.pool[0].device) if self.pool else None
        return [p.index_select(0, rows) for p in self.pool]

    def in_flight(self) -> list[Tensor]:
        """Total mass in flight per state, ``[d_k]`` each (zeros when nothing is held)."""
        return [h.sum(0) for h in self.held]

    @property
    def last_mixing(self) -> np.ndarray:
        """The last step's mixing matrix ``split * (delivered | I)``, ``[N, N]`` (built when
        read)."""
        key, value = self._last
        d = np.zeros(self.n * self.n)
        d[key] = value
        return d.reshape(self.n, self.n)

    def step(self, states: list[Tensor], split: np.ndarray, pushed: np.ndarray,
             delivered: np.ndarray) -> list[Tensor]:
        """Combine ``states`` once.

        ``split[i, j]``: share of j's state pushed to i (column-stochastic over ``pushed`` and
        the diagonal); ``pushed[i, j]``: j pushed a share to i this step (its realised out-link,
        whatever then happens to the message); ``delivered[i, j]``: the message reached i in
        time. Returns the new states (new tensors: the caller may update them in place); with
        running sums the weight state's rows are the last. :meth:`step_edges` on the pairs
        that pushed or delivered.
        """
        n = self.n
        pushed, delivered = np.asarray(pushed, bool), np.asarray(delivered, bool)
        dst, src = np.nonzero((pushed | delivered) & ~np.eye(n, dtype=bool))
        return self.step_edges(states, dst * n + src, split[dst, src], np.diag(split).copy(),
                               pushed[dst, src], delivered[dst, src])

    def step_edges(self, states: list[Tensor], key: np.ndarray, share: np.ndarray,
                   own: np.ndarray, pushed: np.ndarray, delivered: np.ndarray) -> list[Tensor]:
        """:meth:`step` over edge lists: ``key`` the sorted pairs ``dst * N + src`` (no
        diagonal), ``share`` each pair's split, ``own[j]`` the share j keeps, ``pushed`` and
        ``delivered`` per pair. No ``[N, N]`` array is built when the mixing goes sparse."""
        n = self.n
        entries = np.concatenate([key[delivered], np.arange(n) * (n + 1)])
        order = np.argsort(entries, kind="stable")
        self._last = (entries[order], np.concatenate([share[delivered], own])[order])
        out = [mix_entries(n, *self._last, s) for s in states]
        if self.recovery == "none":
            return out
        keep = np.ones(self.keys.size, bool)
        if self.keys.size:
            pos = np.minimum(np.searchsorted(key, self.keys), max(key.size - 1, 0))
            arrive = (key[pos] == self.keys) & delivered[pos] if key.size else ~keep
            if arrive.any():                      # in the order of the keys, as they sum
                rows = torch.as_tensor(self.slots[arrive], device=out[0].device)
                to = torch.as_tensor(self.keys[arrive] // n, device=out[0].device)
                for o, p in zip(out, self.pool):
                    o.index_add_(0, to, p.index_select(0, rows))
            keep = ~arrive
        lost = pushed & ~delivered
        self._hold(states, share[lost], key[lost], key[lost] % n, keep)
        if self.draining is None:
            return out
        w = out[-1]
        low = (w < RESCALE_BELOW).squeeze(1) & self.draining.to(w.device)
        if bool(low.any()):
            scale = torch.where(low[:, None], 1.0 / w, torch.ones_like(w))
            out = [o * scale.to(o.dtype) for o in out]
            self.rescaled += int(low.sum())
        return out

    def _hold(self, states: list[Tensor], share: np.ndarray, keys: np.ndarray, src: np.ndarray,
              keep: np.ndarray) -> None:
        """Add the shares pushed on edges ``keys`` this step to the mass held in flight: rows of
        the pools stay where they are (only this step's arrivals and shares are touched); an
        edge that starts holding takes a free row, zeroed first."""
        self.free = np.concatenate((self.free, self.slots[~keep]))
        old_keys, old_slots = self.keys[keep], self.slots[keep]
        merged = np.union1d(old_keys, keys)
        known = np.isin(keys, old_keys, assume_unique=True)
        fresh = self._take(int((~known).sum()), states)
        slot_of = np.empty(keys.size, np.int64)
        slot_of[known] = old_slots[np.searchsorted(old_keys, keys[known])]
        slot_of[~known] = fresh
        slots = np.empty(merged.size, np.int64)
        slots[np.searchsorted(merged, old_keys)] = old_slots
        slots[np.searchsorted(merged, keys)] = slot_of
        if keys.size:
            dev = states[0].device
            fresh_t = torch.as_tensor(fresh, device=dev)
            to = torch.as_tensor(slot_of, device=dev)
            src_t = torch.as_tensor(src, device=dev)
            for p, s in zip(self.pool, states):
                p.index_fill_(0, fresh_t, 0.0)
                coef = torch.as_tensor(share, dtype=s.dtype, device=dev)[:, None]
                p.index_add_(0, to, s.index_select(0, src_t).mul_(coef))
        self.keys, self.slots = merged, slots

    def _take(self, count: int, states: list[Tensor]) -> np.ndarray:
        """``count`` free rows of the pools (grown by doubling when too few are free)."""
        if count > self.free.size:
            size = self.pool[0].shape[0] if self.pool else 0
            grow = max(count - self.free.size, size, 16)
            self.pool = ([torch.cat([p, p.new_zeros(grow, p.shape[1])]) for p in self.pool]
                         if self.pool else [s.new_zeros(grow, s.shape[1]) for s in states])
            self.free = np.concatenate((self.free, np.arange(size, size + grow)))
        taken, self.free = self.free[:count], self.free[count:]
        return taken
