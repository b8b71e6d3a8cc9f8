"""Event-driven algorithms: per-client clocks instead of rounds (docs/async.md).

An event-driven scenario has ``schedule: {until: seconds | steps: local steps, eval_every:
seconds, links: ..., mode: batched | reference}``. Each client wakes, computes for the time the
compute model gives, then sends; what it uses is what has arrived when it wakes. The network
(:class:`netsim.sim.async_net.AsyncNetwork`) decides every event's time from the network models
alone; the algorithm turns events into tensor *actions* that name the state they read and write,
and :class:`netsim.sim.grouping.ActionQueue` runs them one at a time (``reference``) or in
conflict-free batches (``batched``) with the same result. The run loop sees one "round" per
evaluation window: :meth:`AsyncAlgorithm.run_windows` plays windows of ``eval_every`` simulated
seconds, with the run loop's callbacks, until ``until`` or until every client did its ``steps``.

Each window's report (:class:`RoundReport`) carries what the results need of the clocks
(docs/async.md, "Results"): the ages of the peers' models and messages merged in it (a subclass
calls :meth:`AsyncAlgorithm.merged` where it merges) and each client's idle time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal, Mapping

import numpy as np
import torch

from algorithms.base import Algorithm, Schedule
from netsim.data.augment import augments
from netsim.errors import ConfigError
from netsim.links.continuous import validate_continuous
from netsim.runtime.client_streams import ClientStreams
from netsim.runtime.rows import copy_rows
from netsim.schema import check_section
from netsim.schema.params import Params, param, schema
from netsim.sim.async_net import AsyncNetwork, Message
from netsim.sim.events import Event
from netsim.sim.facade import RoundReport
from netsim.sim.grouping import ActionQueue
from netsim.sim.mailbox import Mail


@dataclass(frozen=True)
class EventSchedule(Params):
    """The ``schedule`` section of an event-driven run (it names ``until`` or ``steps``)."""

    until: float | None = param(None, "stop at this simulated time (s)", lo=0.0, lo_open=True)
    steps: int | None = param(None, "stop when every client did this many local steps", lo=1)
    eval_every: float = param(1.0, "evaluate every this many simulated seconds (a window: "
                              "network.csv row, budgets)", lo=0.0, lo_open=True)
    links: Any = param("resample", "link states in continuous time: resample | markov, or "
                       "{name, coherence, mean_up, mean_down} (netsim.links.continuous)")
    mode: Literal["batched", "reference"] = param(
        "batched", "batched: conflict-free groups of events per tensor call; reference: one "
        "event at a time (the same trace and numbers)")
    max_pending: int = param(4096, "batched: actions held before they run", lo=1)


#: the keys that make a schedule event-driven
EVENT_KEYS = ("until", "steps")


def validate_schedule(section: Any) -> dict:
    """The ``schedule`` section: round-based (:class:`Schedule`) unless it names ``until`` or
    ``steps``. An event-driven one also gets ``rounds``: its number of evaluation windows when
    it ends at ``until``, else 1 (what progress displays and estimates count)."""
    if not (isinstance(section, Mapping) and any(k in section for k in EVENT_KEYS)):
        return check_section("schedule", section, schema(Schedule))
    given = {k: v for k, v in section.items() if k != "rounds"}
    out = check_section("schedule", given, schema(EventSchedule))
    if out["until"] is None and out["steps"] is None:
        raise ConfigError("schedule.until", None, "a simulated time > 0, or schedule.steps "
                          "a number of local steps (at least one of them)")
    out["links"] = validate_continuous(out["links"], "schedule.links")
    out["rounds"] = 1 if out["until"] is None else math.ceil(out["until"] / out["eval_every"])
    if section.get("rounds", out["rounds"]) != out["rounds"]:       # a resolved config has it
        raise ConfigError("schedule.rounds", section["rounds"],
                          f"{out['rounds']} or absent: an event-driven schedule derives it "
                          "(evaluation windows)")
    return out


def event_driven(cfg: dict) -> bool:
    """Whether a resolved scenario's schedule is event-driven."""
    return any(cfg["schedule"].get(k) is not None for k in EVENT_KEYS)


def check_schedule_fits(cfg: dict) -> None:
    """Every algorithm of a resolved scenario runs on its kind of schedule."""
    from algorithms import ALGORITHMS

    for i, spec in enumerate(cfg["algorithms"]):
        cls = ALGORITHMS.get(spec["name"], "algorithms").obj
        if cls.event_driven != event_driven(cfg):
            want = "until or steps (event-driven)" if event_driven(cfg) else "rounds"
            raise ConfigError(f"algorithms[{i}].name", spec["name"],
                              f"an algorithm whose schedule is {want}, as schedule's")


class AsyncAlgorithm(Algorithm):
    """Base of event-driven algorithms. A subclass implements :meth:`start_step` (a client woke
    and starts computing), :meth:`finish_step` (it is done) and :meth:`on_message`, queues its
    tensor work with :meth:`act` and runs it in ``act_<kind>(payloads)`` for any number of
    payloads at once."""

    event_driven = True
    group = "decentralised"
    #: messages wait in the receiver's inbox until it wakes (or the window ends): no event per
    #: message; :meth:`on_mail` sees them then, in delivery order, with their delivery times
    #: (their payload is an integer)
    mail_on_wake: ClassVar[bool] = False

    def __init__(self, ctx):
        super().__init__(ctx)
        sched = ctx.cfg["schedule"]
        self.sched = sched
        self.actions = ActionQueue(self._run_actions, sched["mode"], sched["max_pending"],
                                   bulk=("s",))      # snapshot rows: ("s", row) or Keys
        self.bank = self.new_bank()
        self.grads = torch.zeros_like(self.bank.flat)
        seed = int(ctx.streams.numpy("training").integers(2 ** 63))
        self.batches = ClientStreams(self.data, seed, self.train.batch_size)
        self.steps_done = np.zeros(self.n, np.int64)       # local computations finished
        self.started = np.zeros(self.n, np.int64)          # computations started (batch counter)
        self.stopped = np.zeros(self.n, bool)              # did its steps, or down for good
        self._n_stopped = 0
        self.model_bytes = 4.0 * self.bank.flat.shape[1]
        self.retry = self.train.local_steps * self.step_time   # a down client looks again
        self._merges: list[tuple[int, float, Any]] = []    # (client, time, sent at: one or array)
        self.idle_since = np.zeros(self.n)       # idle from then on; nan while computing
        self.idle_total = np.zeros(self.n)       # idle s of the spells that ended
        self._idle_reported = np.zeros(self.n)   # idle s up to the last window's end
        for i in range(self.n):
            self.net.queue.push(0.0, "wake", i)

    def build_network(self, ctx) -> AsyncNetwork:  # type: ignore[override]
        """Per-client clocks over the scenario's network models (no round-based network)."""
        sched = ctx.cfg["schedule"]
        return AsyncNetwork(ctx.cfg, ctx.streams, sched["links"], sched["eval_every"],
                            server=self.server, inbox=self.mail_on_wake)

    @classmethod
    def check_config(cls, spec: dict, cfg: dict, path: str) -> None:
        for key in ("momentum", "weight_decay", "clip"):
            if spec["train"][key]:
                raise ConfigError(f"{path}.train.{key}", spec["train"][key],
                                  f"{'null' if key == 'clip' else 0} (the paper's plain SGD "
                                  "step; set it in the algorithm's train)")
        if augments(cfg["data"]["augment"]):
            raise ConfigError("data.augment", cfg["data"]["augment"],
                              "no crop or flip for event-driven algorithms (their batches come "
                              "from per-client streams)")
        if cfg["network"]["budget"]["peers_per_round"] is not None:
            raise ConfigError("network.budget.peers_per_round",
                              cfg["network"]["budget"]["peers_per_round"],
                              "null for event-driven algorithms (bytes budgets are per window)")

    # ------------------------------------------------------------------ actions
    def act(self, kind: str, payload: Any, reads=(), writes=()) -> None:
        """Queue tensor work ``act_<kind>`` with the state keys it reads and writes (keys
        ``("s", row)`` of snapshot rows, many at once as ``Keys("s", rows)``)."""
        self.actions.add(kind, payload, reads, writes)

    def _run_actions(self, kind: str, payloads: list) -> None:
        getattr(self, f"act_{kind}")(payloads)

    def compute_grads(self, payloads: list[tuple[int, int]],
                      rows: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """``act_grad``: gradients of clients ``i`` on their batch number ``k`` (payloads
        ``(i, k)``) at the parameters ``rows(idx)``, into :attr:`grads` (a client's gradient
        may differ in float32 round-off with its place in the batch: the kernels' vector lanes
        meet its rows at another alignment)."""
        clients, steps = (np.asarray(c) for c in zip(*payloads))
        x, y = self.batches.batch(clients, steps)
        idx = torch.as_tensor(clients, device=self.device)
        _, g = self.bank.grad(x, y, clients=idx, flat=rows(idx))
        copy_rows(self.grads, idx, g)

    # ------------------------------------------------------------------ what the results see
    def merged(self, client: int, t: float, sent_at: float | np.ndarray) -> None:
        """``client`` merged at ``t`` peers' models or messages sent at ``sent_at`` (one time or
        an array): their ages ``t - sent_at`` go to the window's report (``staleness``)."""
        self._merges.append((client, t, sent_at))

    def _take_merges(self) -> dict[str, np.ndarray]:
        """The window's merges (``client``, ``time``, ``age``), forgotten here."""
        sent = [np.atleast_1d(np.asarray(s, np.float64)) for _, _, s in self._merges]
        sizes = [s.size for s in sent]
        client = np.repeat(np.asarray([c for c, _, _ in self._merges], np.int32), sizes)
        t = np.repeat(np.asarray([t for _, t, _ in self._merges], np.float64), sizes)
        self._merges = []
        return {"client": client, "time": t,
                "age": t - (np.concatenate(sent) if sent else np.empty(0))}

    def idle_until(self, t: float) -> np.ndarray:
        """Each client's idle simulated seconds from 0 to ``t``: time not spent on a
        computation that completes (waiting for a reply, down, its work lost, done with its
        steps)."""
        return self.idle_total + np.nan_to_num(t - self.idle_since)

    def _take_idle(self) -> np.ndarray:
        """Each client's idle seconds in the window that ends now."""
        upto = self.idle_until(self.net.now)
        window, self._idle_reported = upto - self._idle_reported, upto
        return window

    # ------------------------------------------------------------------ events
    def start_step(self, i: int, t: float, k: int) -> None:
        raise NotImplementedError

    def finish_step(self, i: int, t: float) -> None:
        raise NotImplementedError

    def on_message(self, t: float, msg, delivered: bool) -> None:
        raise NotImplementedError

    def on_mail(self, mail: Mail) -> None:
        """Inbox mode: messages collected for one receiver (column arrays, in delivery order);
        by default :meth:`on_message` for each."""
        for t, mid, edge, src, sent, nbytes, data, ok in zip(
                mail.time.tolist(), mail.id.tolist(), mail.edge.tolist(), mail.src.tolist(),
                mail.sent_at.tolist(), mail.nbytes.tolist(), mail.data.tolist(),
                mail.delivered.tolist()):
            self.on_message(t, Message(mid, edge, src, mail.dst, sent, nbytes, data), ok)

    def gone(self, i: int, t: float) -> None:
        """Client i was found down for good at ``t`` (it wakes no more)."""

    def wake_at(self, i: int, t: float) -> None:
        """Client i wakes again at ``t`` unless it did its steps."""
        steps = self.sched["steps"]
        if steps is not None and self.steps_done[i] >= steps:
            self._stop(i)
        else:
            self.net.queue.push(t, "wake", i)

    def _handle(self, ev: Event, delivered: bool) -> None:
        i, t, net = ev.client, ev.time, self.net
        if ev.kind == "deliver":
            self.on_message(t, ev.data, delivered)
        elif ev.kind == "finish":
            self.steps_done[i] += 1
            self.idle_since[i] = t
            net.events.add(t, i, "finish", -1, int(self.steps_done[i]))
            self.finish_step(i, t)
        elif not net.alive(i, t):
            if net.down_for_good(i, t):
                self._stop(i)
                self.gone(i, t)
            else:
                net.queue.push(t + self.retry, "wake", i)
        else:
            if self.mail_on_wake and (mail := net.collect(i, t)) is not None:
                self.on_mail(mail)
            k = int(self.started[i])
            self.started[i] += 1
            net.events.add(t, i, "wake", -1, k)
            self.start_step(i, t, k)
            end, survives = net.step_end(i, t, self.train.local_steps, self.step_time)
            if survives:                               # busy until it finishes
                self.idle_total[i] += t - self.idle_since[i]
                self.idle_since[i] = np.nan
            net.queue.push(end, "finish" if survives else "wake", i)

    # ------------------------------------------------------------------ windows
    def round(self, t: int) -> RoundReport:
        """Window ``t``: every event before its end, then the held tensor work; its report has
        the window's merges and idle times."""
        end = (t + 1) * self.sched["eval_every"]
        if self.sched["until"] is not None:
            end = min(end, self.sched["until"])
        self.net.run_until(end, self._handle, self.done)
        if self.mail_on_wake:          # the window's deliveries (up to now where the run ended)
            stopped = self.done()
            for mail in self.net.collect_all(self.net.now if stopped else end, not stopped):
                self.on_mail(mail)
        self.actions.flush()
        return RoundReport(staleness=self._take_merges(), idle=self._take_idle())

    def done(self) -> bool:
        """Every client did its steps or is down for good (``steps`` schedules)."""
        return self._n_stopped == self.n

    def _stop(self, i: int) -> None:
        """Client i wakes no more."""
        if not self.stopped[i]:
            self.stopped[i] = True
            self._n_stopped += 1

    def run_windows(self, emit: Callable[..., None], first: int = 0) -> None:
        """The run loop of an event-driven run: windows until ``until`` or :meth:`done` (with
        ``steps`` also when no event is left: clients waiting for ever), with the run loop's
        hooks (``emit(hook, *args)``; netsim.running.loop); ``first`` > 0: resumed from a
        checkpoint taken after that many windows (its state already loaded)."""
        emit("on_start")
        if first == 0:
            emit("on_eval", 0)
        t, until = first, self.sched["until"]
        while not self.done() and (self.net.now < until if until is not None
                                   else len(self.net.queue)):    # nothing left to happen
            emit("on_report", self.play(t))
            emit("on_step", self.net.end_round())
            emit("on_round", t)
            emit("on_eval", t + 1)
            emit("on_round_end", t)
            t += 1
        emit("on_end")
