"""Checkpoints of a run, for ``netsim run --resume``: continue after a kill with the same numbers.

One file, ``OUT/<name>/checkpoint.pkl``, written atomically (a temporary file renamed into
place, so a kill leaves the previous one) every ``outputs.checkpoint_every`` rounds of every
(algorithm, seed) run (by default every ``rounds // 4`` rounds once :data:`CHECKPOINT_SECONDS`
of wall time have passed since the last one) and after each run finishes. It holds what the run
has produced so far (the rows of metrics.csv and network.csv, the finished runs' results) and,
mid-run, the whole state of the running algorithm: its client banks (parameters, momentum,
BatchNorm statistics), its own state (W, push-sum weights, lambda, EMA, ...), its random generators
and its engine (clock, message store: the newest copies, their rows, pending late messages and
push-sum's mass in flight; budgets, link processes), and the recorder's. What the run rebuilds
identically from its config and seed — the clients' data, the model, the typed parameters — is not
stored (pickle persistent ids). Deleted when the run finishes unless ``outputs.keep_checkpoints``. A
resumed run's ``ResultsWriter`` reads it back (netsim.results); :class:`RunCheckpoint` writes it and
hands the interrupted run its state.
"""
from __future__ import annotations

import copyreg
import io
import math
import pickle
import time
from typing import TYPE_CHECKING, Any, Callable

import torch

from netsim.results import CHECKPOINT, ResultsWriter
from netsim.running.callbacks import Callback

if TYPE_CHECKING:
    from netsim.running.recorder import Recorder

#: with ``outputs.checkpoint_every: null``, the least wall time between two mid-run checkpoints
#: (a run of a few seconds writes none: a checkpoint can cost a third of its round)
CHECKPOINT_SECONDS = 10.0


def _generator(device: str, state: torch.Tensor) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.set_state(state)
    return gen


copyreg.pickle(torch.Generator, lambda g: (_generator, (str(g.device), g.get_state())))


def _rebuilt(alg) -> dict[str, Any]:
    """The objects of ``alg`` that a resumed run builds anew from the config and seed, and
    ``alg`` itself (its state refers to it: the bound methods an event-driven engine calls)."""
    return {"ctx": alg.ctx, "data": alg.data, "model": alg.ctx.model, "hp": alg.hp,
            "train": alg.train, "algorithm": alg}


def dump_algorithm(alg) -> bytes:
    """The state of ``alg`` (its ``__dict__``) without what is rebuilt from the config."""
    keep = {id(obj): name for name, obj in _rebuilt(alg).items()}

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj: Any) -> str | None:
            return keep.get(id(obj))

    buf = io.BytesIO()
    Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(alg.__dict__)
    return buf.getvalue()


def load_algorithm(alg, blob: bytes) -> None:
    """Put the state of :func:`dump_algorithm` into ``alg``, freshly built from the same config
    and seed."""
    objects = _rebuilt(alg)

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid: str) -> Any:
            return objects[pid]

    alg.__dict__.update(Unpickler(io.BytesIO(blob)).load())


def windows(schedule: dict) -> int | None:
    """The rounds of a round schedule, or the windows (of ``eval_every`` simulated seconds) of
    an event-driven one until ``until``; None for ``steps`` (the run ends when the clients have
    done them)."""
    if schedule.get("rounds") is not None:
        return schedule["rounds"]
    if schedule.get("until") is None:
        return None
    return max(1, math.ceil(schedule["until"] / schedule["eval_every"] - 1e-9))


class Checkpointer(Callback):
    """Writes the checkpoint every ``every`` rounds (or windows: event-driven runs) of a run (not
    after its last round, where it is known: the run then finishes and the runner writes one),
    skipping those due less than ``min_seconds`` of
    wall time after the run's start or its last checkpoint. ``state()`` gives the run-level part
    (rows, finished runs); ``current()`` the running algorithm's recorder state."""

    def __init__(self, write: Callable[[dict], None], state: Callable[[], dict],
                 current: Callable[[], dict], every: int, rounds: int, min_seconds: float = 0.0):
        self.write, self.state, self.current = write, state, current
        self.every, self.rounds, self.min_seconds = every, rounds, min_seconds
        self.last = time.monotonic()

    def on_round_end(self, alg, t: int) -> None:
        done = t + 1
        if (done % self.every == 0 and (self.rounds is None or done < self.rounds)
                and time.monotonic() - self.last >= self.min_seconds):
            self.write({**self.state(), "current": {**self.current(), "round": done,
                                                    "algorithm": dump_algorithm(alg)}})
            self.last = time.monotonic()


class RunCheckpoint:
    """The checkpoints of one run writing through ``writer``: the finished (algorithm, seed)
    runs' results (``per_run``: label -> seed -> entry) with the rows written so far, and mid-run
    the running one's state. A resumed run (``writer.resumed``) starts from its checkpoint:
    ``current`` is then the interrupted (algorithm, seed) run, until :meth:`resume` takes it."""

    def __init__(self, writer: ResultsWriter, cfg: dict):
        resumed = writer.resumed or {"per_run": {a["label"]: {} for a in cfg["algorithms"]},
                                     "current": None}
        self.writer = writer
        self.per_run: dict[str, dict[int, dict]] = resumed["per_run"]
        self.current: dict | None = resumed["current"]
        every = cfg["outputs"]["checkpoint_every"]
        self.rounds = windows(cfg["schedule"])
        self.every = every or max(1, (self.rounds or 0) // 4)
        self.min_seconds = CHECKPOINT_SECONDS if every is None else 0.0

    def state(self) -> dict:
        """The run-level part of a checkpoint: rows written and finished runs."""
        return {"metrics": self.writer.metrics, "network": self.writer.network,
                "per_run": self.per_run, "current": None}

    def save(self, state: dict | None = None) -> None:
        """Write ``state`` (default: the run-level part, between two runs) as the checkpoint."""
        state = self.state() if state is None else state
        self.writer.write(CHECKPOINT, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))

    def resume(self, label: str, seed: int, alg, rec: Recorder) -> int:
        """The round the run (label, seed) starts from: 0, or where the interrupted run's
        checkpoint was taken, with its state put into ``alg`` and ``rec``."""
        cur = self.current
        if cur is None or (cur["label"], cur["seed"]) != (label, seed):
            return 0
        load_algorithm(alg, cur["algorithm"])
        rec.restore(cur["recorder"])
        self.current = None
        return cur["round"]

    def callback(self, label: str, seed: int, rec: Recorder) -> Checkpointer:
        """The callback writing the checkpoints of the run (label, seed)."""
        return Checkpointer(self.save, self.state,
                            lambda: {"label": label, "seed": seed, "recorder": rec.state()},
                            self.every, self.rounds, self.min_seconds)

    def remove(self) -> None:
        """Delete the checkpoint (the run finished)."""
        self.writer.path(CHECKPOINT).unlink(missing_ok=True)
