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
over long runs; the receiver's arithmetic is the same. The mass in flight lives with the
network's other messages (``netsim.sim.store.InFlight``, given to :class:`PushSum`): only edges
that currently hold mass are stored, so memory is up to ``2 H (d + 1)`` floats with H at most
the number of edges of the base graph (about ``loss x E`` under i.i.d. loss; on the complete
graph at most ``N (N - 1) (d + 1)`` floats). Messages keep their size: ``d + 1`` floats, the
running sums instead of the shares.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from netsim.runtime.mixing import mix_entries, push_sum_shares
from netsim.runtime.scratch import Scratch
from netsim.schema.params import Params, param

LossRecovery = Literal["running_sums", "none"]

#: dtype of the push-sum weights w and of their mass in flight, always. The state z and its mass
#: in flight are in ``state_dtype`` (float32, as the models, with running sums): in float32 the
#: rounding of each combination accumulates (after 2,000 lossy steps the de-biased values are off
#: by ~2e-5 of their scale, far below one SGD step), in float64 below 1e-9.
WEIGHT_DTYPE = torch.float64

#: A draining node's weight is rescaled to 1 (with its z) below this: far above float64's
#: underflow, far below any weight a node that still receives mass has.
RESCALE_BELOW = 1e-20

@dataclass(frozen=True)
class PushSumParams(Params):
    """The options of every push-sum algorithm (SGP, PDBO's inner SGP, D-PSGD's push-sum
    variant): :meth:`PushSum.from_params`."""

    loss_recovery: LossRecovery = param(
        "running_sums", "running_sums: the mass of a lost, blocked or late message arrives with "
        "the next message on that edge (Hadjicostis et al. 2016); none: the papers' idealised "
        "push-sum, the mass is lost")
    min_weight: float = param(
        0.5, "a local step enters x_i = z_i / w_i as delta_i / max(w_i, min_weight): caps the "
        "1/w_i amplification of the Nedic form at nodes with little mass (sparse or not strongly "
        "connected graphs); 0 = the exact form", lo=0.0, hi=1.0)
    state_dtype: Literal["auto", "float32", "float64"] = param(
        "auto", "dtype of the push-sum state z and of its mass in flight (the weights w and "
        "theirs stay float64): float32, the models' dtype, de-biases to ~2e-5 of the models' "
        "scale after 2,000 lossy steps (far below one SGD step); float64 keeps sum z exact to "
        "~1e-9 at twice the mixing's memory traffic; auto: float32, but float64 with "
        "loss_recovery none, where lost mass makes w and z decay geometrically and a float32 z "
        "would underflow (below 1e-38) while w has not")


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
    import networkx as nx                      # loaded by the topologies already (scipy's
                                               # csgraph would cost 120 ms of imports)
    adj = np.asarray(reachable, bool) & ~np.eye(len(reachable), dtype=bool)
    src, dst = np.nonzero(adj)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(adj)))
    graph.add_edges_from(zip(src.tolist(), dst.tolist()))
    label = np.empty(len(adj), np.int64)
    parts = 0
    for parts, members in enumerate(nx.strongly_connected_components(graph), 1):
        label[list(members)] = parts - 1
    across = label[src] != label[dst]
    feeds = np.zeros(parts, bool)
    feeds[label[src[across]]] = True
    return GraphCheck(len(adj), int(parts), int((~adj.any(axis=0)).sum()), feeds[label])


class PushSum:
    """One push-sum combination per call, for states ``[N, d_k]`` pushed together (z and w).

    ``recovery``: ``running_sums`` (mass of missed messages arrives later, held meanwhile in
    ``mass``: the network's, ``Network.store.mass``, a ``netsim.sim.store.InFlight``) or ``none``
    (the papers' idealised push-sum: mass of missed messages is lost).

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
                 draining: np.ndarray | None = None, state_dtype: str = "auto", mass=None):
        self.n, self.recovery, self.min_weight, self.mass = n, recovery, min_weight, mass
        if state_dtype == "auto":                     # PushSumParams.state_dtype
            state_dtype = "float64" if recovery == "none" else "float32"
        self.dtype = getattr(torch, state_dtype)
        self.draining = None if draining is None or not np.any(draining) else \
            torch.as_tensor(np.asarray(draining, bool))
        self._last = (np.arange(n) * (n + 1), np.ones(n))      # the identity's entries
        self.rescaled = 0
        self._scratch = Scratch()
        self._outputs: list[tuple[Scratch, Scratch]] = []   # per state: its outputs, in turn

    @classmethod
    def from_params(cls, n: int, hp: PushSumParams, draining: np.ndarray | None = None,
                    mass=None) -> "PushSum":
        """From an algorithm's typed parameters (a :class:`PushSumParams`)."""
        return cls(n, hp.loss_recovery, hp.min_weight, draining, hp.state_dtype, mass)

    def fresh_weights(self, device: torch.device | str = "cpu") -> Tensor:
        """Initial push-sum weights ``w = 1``, ``[N, 1]`` in :data:`WEIGHT_DTYPE`."""
        return torch.ones(self.n, 1, dtype=WEIGHT_DTYPE, device=device)

    @staticmethod
    def debias(z: Tensor, w: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
        """The de-biased models ``x = z / w`` in the models' ``dtype``."""
        return (z / w).to(dtype)

    def debias_into(self, models: Tensor, z: Tensor, w: Tensor) -> Tensor:
        """:meth:`debias` written into ``models`` (in z's dtype: through a work buffer where it
        is not the models')."""
        if z.dtype == models.dtype:
            return torch.div(z, w.to(z.dtype), out=models)
        return models.copy_(torch.div(z, w.to(z.dtype), out=self._scratch.like(z)))

    def add_step(self, z: Tensor, delta: Tensor, w: Tensor) -> Tensor:
        """``z += delta * step_scale(w)`` in place: a Nedić-form local step ``delta`` (in the
        models' dtype, scaled in place) added in z's dtype (through a work buffer where it is
        not the models'); a scale of 1 everywhere (no weight below ``min_weight``) skips the
        product, which would leave ``delta`` as it is."""
        scale = self.step_scale(w, delta.dtype)
        step = delta if bool((scale == 1).all()) else delta.mul_(scale)
        return z.add_(step if step.dtype == z.dtype else self._scratch.like(z).copy_(step))

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
        self.mass.clear()

    @property
    def last_mixing(self) -> np.ndarray:
        """The last step's mixing matrix ``split * (delivered | I)``, ``[N, N]`` (built when
        read)."""
        key, value = self._last
        d = np.zeros(self.n * self.n)
        d[key] = value
        return d.reshape(self.n, self.n)

    def _output(self, k: int, state: Tensor) -> Tensor:
        """A buffer like ``state``, the ``k``-th state combined, whose memory is not
        ``state``'s (two per state, in turn)."""
        while len(self._outputs) <= k:
            self._outputs.append((Scratch(), Scratch()))
        first, second = (pair.like(state) for pair in self._outputs[k])
        mine = state.untyped_storage().data_ptr()
        return first if first.untyped_storage().data_ptr() != mine else second

    def step_uniform(self, states: list[Tensor], key: np.ndarray, src: np.ndarray,
                     up: np.ndarray, delivered: np.ndarray) -> list[Tensor]:
        """SGP's step (Assran et al. 2019, Alg. 1) over an exchange's edges (``key`` sorted,
        senders ``src``): each node splits its states uniformly over its realised out-links
        ``up`` and itself (:func:`push_sum_shares`); :meth:`step_edges` with ``delivered``."""
        own = push_sum_shares(self.n, src.compress(up))
        return self.step_edges(states, key, own[src], own, up, delivered)

    def step_edges(self, states: list[Tensor], key: np.ndarray, share: np.ndarray,
                   own: np.ndarray, pushed: np.ndarray, delivered: np.ndarray) -> list[Tensor]:
        """Combine ``states`` once over the pairs ``key`` (sorted ``dst * N + src``, no
        diagonal): ``share`` is the part of its state the pair's sender j pushes to its receiver
        i (with ``own[j]``, the part j keeps, column-stochastic), ``pushed``: j pushed it this
        step (its realised out-link, whatever then happens to the message), ``delivered``: it
        reached i in time. Returns the new states (the caller may update them in place; they
        are written into one of two buffers per state in turn, never an input, so that a step
        allocates no state-sized tensor: a state returned by the step before last is
        overwritten); with running sums the weight state's rows are the last. No ``[N, N]``
        array is built when the mixing goes sparse."""
        n = self.n
        entries = np.concatenate([key.compress(delivered), np.arange(n) * (n + 1)])
        order = np.argsort(entries, kind="stable")
        self._last = (entries[order], np.concatenate([share.compress(delivered), own])[order])
        out = [mix_entries(n, *self._last, s, self._output(k, s)) for k, s in enumerate(states)]
        if self.recovery == "none":
            return out
        self.mass.deliver(out, key, delivered, n)
        lost = pushed & ~delivered
        lost_key = key.compress(lost)
        self.mass.hold(states, share.compress(lost), lost_key, lost_key % n)
        if self.draining is None:
            return out
        w = out[-1]
        low = (w < RESCALE_BELOW).squeeze(1) & self.draining.to(w.device)
        if bool(low.any()):
            scale = torch.where(low[:, None], 1.0 / w, torch.ones_like(w))
            for o in out:                       # not the inputs (step_edges): scaled in place
                o.mul_(scale.to(o.dtype))
            self.rescaled += int(low.sum())
        return out
