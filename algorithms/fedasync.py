"""FedAsync: asynchronous federated optimization (Xie, Koyejo & Gupta 2019, arXiv:1903.03934,
Algorithm 1 with the staleness functions of its Section 3), event-driven (docs/async.md).

Algorithm 1, with the client side of :mod:`algorithms.async_server`:

- worker (client) i receives ``(x_t, t)`` and sets ``tau = t``; it runs ``H`` local SGD steps
  (``train.local_steps``, ``train.lr``) on ``g_{x_tau}(x; z) = f(x; z) + rho/2 ||x - x_tau||^2``
  (``rho``: 0 is plain SGD) and pushes ``(x_new, tau)`` to the server;
- the server, on each ``(x_new, tau)``, counts ``t += 1``, sets ``alpha_t = alpha s(t - tau)``
  and mixes ``x_t = (1 - alpha_t) x_{t-1} + alpha_t x_new``, then sends ``(x_t, t)`` back.

Staleness functions (Section 3), of ``t - tau`` (at least 1: a model started from the newest
version is one update behind the one it makes):

- ``constant``: ``s = 1``;
- ``polynomial``: ``s_a(t - tau) = (t - tau + 1)^(-a)``;
- ``hinge``: ``s_{a,b}(t - tau) = 1`` if ``t - tau <= b``, else ``1 / (a (t - tau - b) + 1)``.

With ``alpha = 1`` and ``constant`` each arriving model replaces the global one; with
``alpha_t <= 1`` the global model stays a convex combination of the models it mixed
(tests/test_fedasync.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from algorithms import register
from algorithms.async_server import AsyncServerAlgorithm
from netsim.schema.params import Params, param


@dataclass(frozen=True)
class FedAsyncParams(Params):
    """FedAsync's parameters (Algorithm 1's alpha and rho, Section 3's s)."""

    alpha: float = param(0.6, "alpha: the mixing weight before the staleness factor, "
                         "alpha_t = alpha s(t - tau)", lo=0.0, hi=1.0, lo_open=True)
    staleness: Literal["constant", "polynomial", "hinge"] = param(
        "polynomial", "s(t - tau): constant 1; polynomial (t - tau + 1)^-a; hinge 1 up to b, "
        "then 1 / (a (t - tau - b) + 1)")
    a: float = param(0.5, "polynomial and hinge: the decay a of s", lo=0.0, lo_open=True)
    b: int = param(4, "hinge: the staleness up to which s = 1", lo=0)
    rho: float = param(0.0, "weight rho of the local objective's proximal term "
                       "rho/2 ||x - x_tau||^2 (0: plain SGD)", lo=0.0)


def staleness_weight(hp: FedAsyncParams, lag: int) -> float:
    """``s(t - tau)`` of Section 3 for ``lag = t - tau``."""
    if hp.staleness == "polynomial":
        return (lag + 1.0) ** -hp.a
    if hp.staleness == "hinge" and lag > hp.b:
        return 1.0 / (hp.a * (lag - hp.b) + 1.0)
    return 1.0


@register("fedasync")
class FedAsync(AsyncServerAlgorithm):
    """The server mixes each arriving model into its own with weight alpha s(t - tau) (Xie et
    al. 2019, Algorithm 1)."""

    params = FedAsyncParams
    hp: FedAsyncParams

    def __init__(self, ctx):
        super().__init__(ctx)
        self.rho = self.hp.rho

    def server_receive(self, t: float, i: int, tau: int, msg_id: int) -> None:
        self.version += 1
        weight = self.hp.alpha * staleness_weight(self.hp, self.version - tau)
        self.net.events.add(t, self.hub, "mix", i, msg_id)
        self.act("mix", (i, weight), reads=[("x", i)], writes=[("server",)])

    def act_mix(self, payloads: list[tuple[int, float]]) -> None:
        """``x_t = (1 - alpha_t) x_{t-1} + alpha_t x_new``, in event order (mixes conflict, so
        a call has one)."""
        for i, weight in payloads:
            self.server_model.mul_(1.0 - weight).add_(self.bank.flat[i:i + 1], alpha=weight)
