"""The run loop of one (algorithm, seed) run: rounds, and callbacks for everything else.

An algorithm implements ``round(t)``; this loop plays the schedule and tells the callbacks
(netsim.running.callbacks: the hooks, and ``Diverged`` that stops a run) what happened. Beside it:
the divergence check (:class:`HealthCheck`) and the building of an algorithm as a run builds it.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from algorithms.base import Schedule
from netsim.running.callbacks import Callback, Diverged


def run_loop(alg, rounds: int, eval_every: int, callbacks: Sequence[Callback],
             first: int = 0) -> None:
    """Rounds ``first``..rounds-1 of ``alg`` (``first`` > 0: resumed from a checkpoint taken
    after that many rounds), evaluated every ``eval_every`` rounds and after the last."""
    def emit(hook: str, *args: Any) -> None:
        for cb in callbacks:
            getattr(cb, hook)(alg, *args)

    if alg.event_driven:                  # it plays its own windows (algorithms/async_base.py)
        return alg.run_windows(emit, first)
    schedule = Schedule(rounds, eval_every)
    emit("on_start")
    if first == 0:
        emit("on_eval", 0)
    for t in range(first, rounds):
        emit("on_report", alg.play(t))
        emit("on_step", alg.net.end_round())
        emit("on_round", t)
        if schedule.evaluates_after(t):
            emit("on_eval", t + 1)
        emit("on_round_end", t)
    emit("on_end")


#: A push-sum weight at or below this is treated as vanished (z / w is then meaningless).
MIN_PUSH_SUM_WEIGHT = 1e-30


class HealthCheck(Callback):
    """Stops the run with :class:`Diverged` after the first round that leaves a client's
    ``alg.health()`` tensors non-finite (push-sum weights: also not above
    :data:`MIN_PUSH_SUM_WEIGHT`). A value ``(x[K, ...], rows[N])`` gives client i the row
    ``x[rows[i]]`` (models shared by groups of clients are checked once)."""

    def on_round(self, alg, t: int) -> None:
        for what, x in alg.health().items():
            x, rows = x if isinstance(x, tuple) else (x, None)
            flat = x.reshape(x.shape[0], -1)
            weight = what == "push-sum weight"
            if all_healthy(flat, weight):           # the usual round: one or two reductions
                continue
            ok = finite_rows(flat)
            if weight:
                ok &= (flat > MIN_PUSH_SUM_WEIGHT).all(1)
            if rows is not None:                    # shared rows: client i's is x[rows[i]]
                ok = ok[rows]
            if not bool(ok.all()):
                vanished = " or vanished" if what == "push-sum weight" else ""
                raise Diverged(t + 1, int(torch.nonzero(~ok)[0, 0]), f"{what} non-finite{vanished}")


def all_healthy(x: torch.Tensor, weight: bool) -> bool:
    """Whether every entry of ``x: [N, k]`` is finite and, for push-sum weights (``weight``),
    above :data:`MIN_PUSH_SUM_WEIGHT`: the usual round, one reduction (or two). A finite total
    means every entry is finite (a NaN or an infinity makes it non-finite); a non-finite one may
    still come from healthy entries near the dtype's largest value, which :func:`finite_rows`
    then tells apart."""
    if x.shape[1] and not math.isfinite(x.sum().item()):
        return False
    return not weight or x.min().item() > MIN_PUSH_SUM_WEIGHT       # NaN: False


def finite_rows(x: torch.Tensor) -> torch.Tensor:
    """``isfinite(x).all(1)`` for ``x: [N, k]``, from each row's extremes (a NaN reaches both,
    an infinity one of them): two reductions without an ``[N, k]`` temporary, about 15x faster
    than ``isfinite`` on CPU. :func:`all_healthy` checks the usual round with one total first."""
    if x.shape[1] == 0:
        return torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
    return torch.isfinite(x.amax(1)) & torch.isfinite(x.amin(1))


def make_algorithm(cfg: dict, spec: dict, seed: int, streams, data, model, device):
    """The algorithm of a resolved spec for one seed, as the runner, sweeps and tests build it."""
    from algorithms import ALGORITHMS
    from algorithms.base import Context

    ctx = Context(cfg, spec, seed, streams, data, model, torch.device(device),
                  Schedule.from_config(cfg))
    return ALGORITHMS.get(spec["name"], "algorithms").obj(ctx)


def build_algorithm(scenario, index: int = 0, seed: int | None = None, device: str = "cpu"):
    """The ``index``-th algorithm of a scenario (a Scenario, a mapping or a YAML path) for
    ``seed`` (default the scenario's), with its data and model built as the runner builds them:
    to drive it round by round (``alg.play(t)``: the round and its report;
    ``alg.net.end_round()`` closes a round)."""
    from netsim.data import build_client_data
    from netsim.models import build_model
    from netsim.scenario.config import Scenario
    from netsim.util.rng import Streams

    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario) if isinstance(scenario, str) else Scenario(scenario)
    cfg = scenario.resolve()
    seed = cfg["seed"] if seed is None else seed
    streams = Streams(seed, cfg["stream_seeds"])
    data = build_client_data(cfg["data"], cfg["clients"], streams.numpy("data"), device)
    model = build_model(cfg["model"], data.input_shape, data.num_classes, data.task, device=device)
    return make_algorithm(cfg, cfg["algorithms"][index], seed, streams, data, model, device)
