"""The base class every algorithm derives from, and the per-run context it is given.

An algorithm is a sequence of vectorised rounds. Each round plays its computation and
communication phases on the simulated network (``self.net``, :class:`netsim.sim.facade.Network`:
clients only) and does its math on client banks (``netsim.runtime.ClientBank``) with the arrays
the phases return. The run loop (:mod:`netsim.running.loop`) plays the schedule and its callbacks
evaluate, record and check; an algorithm exposes what they read: each round's report
(:meth:`Algorithm.play`: the links the network delivered, and what ``round`` returns),
``personal_models``, ``collaboration``, ``health`` and ``extra_arrays``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from netsim.data import ClientData
from netsim.models import BatchedModel
from netsim.util.rng import Streams
from netsim.schema.params import Params, make_params, param
from netsim.runtime import ClientBank
from netsim.runtime.sgd import Train
from netsim.runtime.pushsum import GraphCheck, check_graph
from netsim.sim.facade import ExchangeResult, Network, RoundReport, step_time_from_flops
from netsim.sim.policy import Policy


@dataclass(frozen=True)
class Schedule(Params):
    """The ``schedule`` section: the rounds a run plays and when the run loop
    (:func:`netsim.running.loop.run_loop`) evaluates."""

    rounds: int = param(20, "communication rounds", lo=1)
    eval_every: int = param(5, "evaluate every k rounds (and after the last)", lo=1)

    @classmethod
    def from_config(cls, cfg: dict) -> Schedule:
        """The ``schedule`` section of a resolved scenario."""
        return cls(cfg["schedule"]["rounds"], cfg["schedule"]["eval_every"])

    def evaluates_after(self, t: int) -> bool:
        """Whether the loop evaluates after round ``t``: every ``eval_every`` rounds and after
        the last."""
        return (t + 1) % self.eval_every == 0 or t + 1 == self.rounds


@dataclass
class Context:
    """What an algorithm gets for one (algorithm, seed) run."""

    cfg: dict                 # the resolved scenario
    spec: dict                # the resolved algorithm spec: its params, label, train, policy
    seed: int
    streams: Streams
    data: ClientData
    model: BatchedModel
    device: torch.device
    schedule: Schedule        # the scenario's schedule section


class Algorithm:
    """One algorithm run: ``round(t)`` for t = 0..rounds-1, played by
    :func:`netsim.running.loop.run_loop`.

    Subclasses set ``server = True`` when they run a server (the simulated network is then a
    star of N clients around node N), implement ``round`` and ``personal_models`` and may
    override ``collaboration``.
    """

    #: the run table's group (netsim.analysis.summary.TABLE_GROUPS): baselines, federated,
    #: clustered, decentralised, learned graph, learned weights, or other
    group: ClassVar[str] = "other"

    server: ClassVar[bool] = False
    #: whether it runs on per-client clocks and plays its own windows (algorithms/async_base.py)
    event_driven: ClassVar[bool] = False
    #: the parameters' dataclass, validated with the scenario; ``hp`` is its instance
    params: ClassVar[type[Params]] = Params
    hp: Params
    #: bytes per ordered pair of clients that the algorithm's dense ``[N, N]`` arrays take at the
    #: peak of a round (netsim.scenario.memory): at least the float64 collaboration matrix an
    #: evaluation reads
    pair_bytes: ClassVar[int] = 8

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.hp = make_params(self.params, ctx.spec)
        self.train = make_params(Train, ctx.spec["train"])
        self.data = ctx.data
        self.n = ctx.cfg["clients"]
        self.device = ctx.device
        self.policy = Policy(**ctx.spec["policy"])
        self.net = self.build_network(ctx)
        self.gen = ctx.streams.torch("training", ctx.device)
        self.rng = ctx.streams.numpy("algorithm")
        compute = ctx.cfg["network"]["compute"]
        self.step_time = (compute.get("step_time") or
                          step_time_from_flops(ctx.model.flops_per_sample, self.train.batch_size))

    # ------------------------------------------------------------------ construction
    def build_network(self, ctx: Context) -> Network:
        """The network facade the algorithm plays on (the round engine's)."""
        return Network.build(ctx.cfg, ctx.streams, self.policy, server=self.server)

    def new_bank(self) -> ClientBank:
        """A bank of N models; every algorithm of a seed starts from the same initial models
        (drawn on the CPU, so CPU and CUDA runs start alike)."""
        return ClientBank(self.ctx.model, self.n, self.device,
                          self.ctx.streams.torch("init", "cpu"), task=self.data.task,
                          loss_scale=self.data.loss_scale)

    # ------------------------------------------------------------------ shared building blocks
    def local_sgd(self, bank: ClientBank, steps: int, clients: torch.Tensor | None = None,
                  prox: tuple[float, torch.Tensor] | None = None) -> None:
        """``steps`` mini-batch SGD steps of the listed clients (all when None), batched."""
        tr = self.train
        for _ in range(steps):
            x, y = self.data.sample_batch("train", tr.batch_size, self.gen, clients)
            bank.sgd_step(x, y, tr.sgd, clients=clients,
                          prox=prox)

    def compute_phase(self, active: np.ndarray | None = None, start: np.ndarray | None = None,
                      steps: int | None = None, deadline: float | None = None):
        """Local work of ``steps`` (default E) steps of the ``active`` clients (default all);
        see :meth:`Network.compute`. Arrays are over the N clients."""
        return self.net.compute(self.train.local_steps if steps is None else steps,
                                self.step_time, active=active, start=start, deadline=deadline)

    def exchange(self, request: np.ndarray, nbytes, ready: np.ndarray | None = None,
                 round_start: float | None = None, rows: torch.Tensor | int | None = None,
                 logged: bool = True) -> ExchangeResult:
        """Send along ``request[dst, src]`` under this algorithm's receiver policy; the messages
        carry ``rows`` (sender j's row j) and their deliveries count in the round's links unless
        ``logged`` is False (:meth:`Network.exchange`)."""
        return self.net.exchange(request, nbytes, ready=ready, round_start=round_start,
                                 rows=rows, logged=logged)

    def broadcast(self, to: np.ndarray, nbytes, steps: int | None = None):
        """Server sends ``nbytes`` to the clients ``to`` [N]; those that receive it start
        ``steps`` (default E) local steps at its arrival. Returns the compute phase and the
        received mask, both over the clients (:meth:`Network.broadcast`)."""
        got = self.net.broadcast(to, nbytes, self.train.local_steps if steps is None else steps,
                                 self.step_time)
        return got.compute, got.received

    def gather(self, comp, nbytes, round_start: float) -> np.ndarray:
        """The clients that finished ``comp`` upload ``nbytes`` to the server when they finish;
        returns the mask [N] of uploads the server accepted (:meth:`Network.gather`)."""
        return self.net.gather(comp, nbytes, round_start)

    def push_sum_graph(self) -> GraphCheck:
        """The graph of links that can ever deliver, checked for push-sum; warns (once per
        message) before the run when it is not strongly connected."""
        check = check_graph((self.net.delivery_probability() > 0).T)
        if check.warning():
            warnings.warn(f"{self.ctx.spec['label']}: {check.warning()}", RuntimeWarning,
                          stacklevel=2)
        return check

    @staticmethod
    def index(mask: np.ndarray, device) -> torch.Tensor:
        """Client indices of a boolean mask as a LongTensor."""
        return torch.as_tensor(np.flatnonzero(mask), dtype=torch.long, device=device)

    def play(self, t: int) -> RoundReport:
        """Round ``t`` and its report (what :meth:`round` returned, with what the network
        gathered: :meth:`Network.report`): what the run loop calls."""
        return self.net.report(t, self.round(t))

    # ------------------------------------------------------------------ to implement
    def round(self, t: int) -> RoundReport | None:
        """The paper's round ``t``; returns None, or a :class:`RoundReport` of what only the
        algorithm knows (``effective``, ``extras``; the network fills in the rest)."""
        raise NotImplementedError

    def personal_models(self) -> torch.Tensor:
        """The model each client uses, ``[N, d]``."""
        raise NotImplementedError

    def evaluate(self, x: torch.Tensor, y: torch.Tensor,
                 mask: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
        """Accuracy (None for regression) and loss ``[N]`` of every client's personal model on
        its padded split ``x, y`` (``mask`` marks its real samples): the evaluation contract
        the recorder relies on."""
        return self.bank.evaluate(x, y, mask, flat=self.personal_models())

    def health(self) -> dict[str, torch.Tensor | tuple[torch.Tensor, torch.Tensor]]:
        """Tensors ``[N, ...]`` that must stay finite (checked after every round), or
        ``(x[K, ...], rows[N])`` where client i's is ``x[rows[i]]``; an algorithm with push-sum
        weights adds them (a weight must also stay positive)."""
        return {"model": self.personal_models()}

    def collaboration(self) -> np.ndarray | None:
        """Row i = weights client i gives to the others (None where it has none)."""
        return None

    def extra_arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """Algorithm-specific arrays for the results: ``{kind: {name: array}}`` is written to
        ``<kind>/<label>_seed<k>.npz`` at the end of the run (e.g. PDBO's outer weights)."""
        return {}

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        """Raise ConfigError for impossible combinations of this algorithm with the scenario."""
