"""The event-driven engine (netsim/sim/async_net.py, events.py, grouping.py;
algorithms/async_base.py): the batched mode gives the reference mode's event trace exactly and
its numbers (bit for bit where no gradient kernel runs, else within float32 round-off), however
the events are grouped; a grouping that joins interacting events is caught; an event-driven
scenario runs from the command's entry point and writes rows carrying simulated time."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from async_helpers import SCENARIOS, models, play, scenario, spread
from netsim.errors import ConfigError
from netsim.scenario.config import Scenario
from netsim.sim import grouping


def both_modes(overrides: dict, index: int, **more):
    """(reference, batched) algorithms after playing the same scenario."""
    runs = []
    for mode in ("reference", "batched"):
        runs.append(play(scenario({**overrides, "schedule.mode": mode, **more}), index))
    return runs


def distinct(alg) -> None:
    """Every client its own model (frozen runs: else averaging changes nothing)."""
    spread(alg.mass[:, :-1] if hasattr(alg, "mass") else alg.bank.flat)


def assert_same(ref, bat, exact: bool) -> None:
    """Identical traces; the same models (bit for bit when ``exact``). For push-sum the state
    (x, w) is compared: the models are x / w, which multiplies the round-off by 1 / w (up to
    60 where failures leave a client with w = 0.016)."""
    assert ref.net.events.rows == bat.net.events.rows
    a, b = (ref.mass, bat.mass) if hasattr(ref, "mass") else (models(ref), models(bat))
    if exact:
        assert torch.equal(a, b)
    else:
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("index", [0, 1], ids=["adpsgd", "async_push"])
def test_batched_equals_reference(name, index):
    ref, bat = both_modes(SCENARIOS[name], index)
    assert_same(ref, bat, exact=False)
    kinds = {row[2] for row in ref.net.events.rows}
    assert {"wake", "finish", "send", "deliver"} <= kinds
    assert bat.actions.calls < ref.actions.calls          # it did batch
    if name == "loss":
        assert "lost" in kinds
    if name == "failures":
        assert ref.stopped.any() or (ref.started > ref.steps_done).any()


@pytest.mark.parametrize("index", [0, 1], ids=["adpsgd", "async_push"])
def test_frozen_models_bit_identical_for_any_grouping(index):
    """Without gradients only elementwise kernels run: every grouping gives the reference's
    numbers bit for bit (max_pending 1: every action alone in the batched path; 5: flushes at
    odd places)."""
    over = {**SCENARIOS["failures"], "train": {"lr": 0.0, "batch_size": 4, "local_steps": 1}}
    ref = play(scenario({**over, "schedule.mode": "reference"}), index, setup=distinct)
    for pending in (1, 5, 4096):
        bat = play(scenario({**over, "schedule.max_pending": pending}), index, setup=distinct)
        assert_same(ref, bat, exact=True)


def test_grouping_interacting_events_is_caught(monkeypatch):
    """A planted grouping that ignores write-after-read conflicts joins events that interact:
    the batched numbers then leave the reference's, and the comparison fails."""
    over = {**SCENARIOS["loss"], "train": {"lr": 0.0, "batch_size": 4, "local_steps": 1}}
    ref = play(scenario({**over, "schedule.mode": "reference"}), 0, setup=distinct)

    real = grouping.conflict_level

    def no_war(reads, writes, last_read, last_write):      # read-after-write conflicts only
        return real(reads, (), last_read, last_write)

    monkeypatch.setattr(grouping, "conflict_level", no_war)
    bad = play(scenario(over), 0, setup=distinct)
    assert ref.net.events.rows == bad.net.events.rows       # the schedule is the same ...
    with pytest.raises(AssertionError):                     # ... the numbers are not
        assert_same(ref, bad, exact=True)


def test_per_client_streams_ignore_grouping():
    """A client's k-th batch is the same whichever clients share the call."""
    alg = play(scenario({"schedule.until": 0.05}), 0)
    x_all, _ = alg.batches.batch(np.arange(6), np.full(6, 3))
    x_one, _ = alg.batches.batch(np.array([4]), np.array([3]))
    assert torch.equal(x_all[4], x_one[0])
    x_next, _ = alg.batches.batch(np.array([4]), np.array([4]))
    assert not torch.equal(x_next[0], x_one[0])


def test_steps_schedule_stops_after_the_steps():
    alg = play(scenario({"schedule": {"steps": 4, "eval_every": 0.2}}), 0)
    assert alg.done() and (alg.steps_done == 4).all()


def test_churn_is_drawn_only_as_far_as_the_run_goes():
    """Liveness is cached until the next crash or recovery. With a window of 1e9 s (nothing
    evaluated before the end) churn is still drawn only about as far as the run went: looking
    for changes a window ahead drew churn for 1e9 s and did not end."""
    raw = scenario({"network.failures": {"churn": {"crash_rate": 2.0, "recover_rate": 8.0,
                                                   "share": 0.5}},
                    "schedule": {"steps": 4, "eval_every": 1.0e9}})
    asked = []

    def setup(alg):
        churn = alg.net.failures.churn
        extend = churn.extend

        def bounded(t: float) -> None:
            asked.append(t)
            assert t < 100.0, f"churn drawn up to {t} s"      # fail at once, do not draw it
            extend(t)

        churn.extend = bounded

    alg = play(raw, 0, setup=setup)
    assert alg.done() and asked and max(asked) <= alg.net.now + 1.0


@pytest.mark.parametrize("schedule, field", [
    ({"until": None, "steps": None}, "schedule.until"),
    ({"until": 1.0, "mode": "fast"}, "schedule.mode"),
    ({"until": 1.0, "eval_every": 0.5, "rounds": 3}, "schedule.rounds"),
    ({"until": -1.0}, "schedule.until"),
    ({"until": 1.0, "links": {"name": "gilbert"}}, "schedule.links.name"),
    ({"until": 1.0, "links": {"name": "markov", "mean_up": 0}}, "schedule.links.mean_up"),
])
def test_bad_event_schedules_name_the_field(schedule, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        Scenario(scenario({"schedule": schedule})).resolve()


def test_algorithms_and_schedules_must_match():
    with pytest.raises(ConfigError, match=r"algorithms\[0\]\.name.*until or steps"):
        Scenario(scenario({"algorithms": ["sgp"]})).resolve()
    with pytest.raises(ConfigError, match=r"algorithms\[0\]\.name.*rounds"):
        Scenario(scenario({"schedule": {"rounds": 2}})).resolve()
    with pytest.raises(ConfigError, match=r"train\.momentum"):
        Scenario(scenario({"train": {"momentum": 0.5}})).resolve()


def test_run_writes_rows_over_simulated_time(tmp_path):
    from netsim import run

    res = run(Scenario.load("scenarios/async_small.yaml").with_overrides(
        {"schedule.until": 1.0, "outputs.figures": False}), out=tmp_path, quiet=True)
    with open(res.dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    times = sorted({float(r["sim_time"]) for r in rows})
    assert times[0] == 0.0 and times[-1] == pytest.approx(1.0)
    summary = json.loads((res.dir / "summary.json").read_text())
    assert set(summary["algorithms"]) >= {"adpsgd", "async_push"}


def test_byte_budget_counts_per_window():
    """``bytes_per_round`` caps what a client sends in each evaluation window."""
    probe = play(scenario({"schedule.until": 0.01}), 0)
    cap = 3 * probe.model_bytes
    sent = []

    def check(alg):
        sent.append(alg.net.window_bytes.max())

    alg = play(scenario({"network.budget": {"bytes_per_round": cap}}), 0, check)
    assert max(sent) <= cap
    assert sum(row["messages_blocked"] for row in alg.net.history) > 0
    assert sum(row[2] == "blocked" for row in alg.net.events.rows) > 0


def test_action_queue_groups_only_independent_actions():
    """Levels: a read after a write, a write after a read or a write go one level up; the
    rest share a call per kind."""
    calls = []
    q = grouping.ActionQueue(lambda kind, payloads: calls.append((kind, payloads)))
    q.add("grad", 0, reads=["x0"], writes=["g0"])
    q.add("grad", 1, reads=["x1"], writes=["g1"])
    q.add("avg", (0, 2), reads=["g0"], writes=["x0", "x2"])     # RAW on g0, WAR on x0
    q.add("grad", 3, reads=["x3"], writes=["g3"])               # independent: level 0
    q.add("grad", 2, reads=["x2"], writes=["g2"])               # RAW on x2
    q.add("avg", (1, 3), reads=["g1"], writes=["x1", "x3"])     # after grads 1 and 3
    q.flush()
    assert calls == [("grad", [0, 1, 3]), ("avg", [(0, 2), (1, 3)]), ("grad", [2])]
    ref = []
    r = grouping.ActionQueue(lambda kind, payloads: ref.append((kind, payloads)), "reference")
    r.add("grad", 0, reads=["x0"], writes=["g0"])
    assert ref == [("grad", [0])] and r.calls == 1


def test_bulk_keys_conflict_like_single_keys():
    """Snapshot rows named many at once (``Keys``) conflict with the same rows named one at a
    time: RAW, WAR and WAW alike."""
    calls = []
    q = grouping.ActionQueue(lambda kind, payloads: calls.append((kind, payloads)),
                             bulk=("s",))
    keys = grouping.Keys
    q.add("push", "a", writes=[("s", 3)])
    q.add("wake", "b", reads=[keys("s", np.array([1, 3]))])         # RAW on row 3
    q.add("wake", "c", reads=[keys("s", np.array([5, 70]))])        # independent: level 0
    q.add("push", "d", writes=[("s", 1)])                           # WAR on row 1 (b)
    q.add("push", "e", writes=[keys("s", np.array([70]))])          # WAR on row 70 (c)
    q.add("push", "f", writes=[("s", 3)])                           # WAR (b), WAW (a)
    q.flush()
    assert calls == [("push", ["a"]), ("wake", ["c"]), ("push", ["e"]), ("wake", ["b"]),
                     ("push", ["d", "f"])]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_inbox_delivers_what_the_event_heap_delivers(name, monkeypatch):
    """Asynchronous gradient push collects its messages from inboxes when it wakes (no event
    per message). Played with an event per message instead (the heap's arrivals, FIFO
    downlinks and liveness at delivery), the same scenario gives the same trace rows at the
    same times, the same network.csv counts and the same push-sum state within float32
    round-off (the float64 sums run in another order, and the gradients at the float32
    de-biased models carry the difference on)."""
    from algorithms.async_push import AsyncPush

    inbox = play(scenario(SCENARIOS[name]), 1)
    monkeypatch.setattr(AsyncPush, "mail_on_wake", False)
    heap = play(scenario(SCENARIOS[name]), 1)
    assert sorted(inbox.net.events.rows) == sorted(heap.net.events.rows)
    kinds = {row[2] for row in heap.net.events.rows}
    assert "deliver" in kinds and ("dropped" in kinds) == (name == "failures")
    for a, b in zip(inbox.net.history, heap.net.history, strict=True):
        assert {k: v for k, v in a.items() if k != "mean_latency"} == \
            {k: v for k, v in b.items() if k != "mean_latency"}
        assert a["mean_latency"] == pytest.approx(b["mean_latency"], rel=1e-12, nan_ok=True)
    torch.testing.assert_close(inbox.mass, heap.mass, rtol=1e-4, atol=1e-5)


def test_push_sum_mail_as_arrays_equals_message_by_message(monkeypatch):
    """Asynchronous gradient push handles a wake's mail as arrays (newest running sum per
    in-edge, snapshot rows released at once); the base class's message-by-message hand-over to
    ``on_message`` gives the same trace and push-sum state (float64 sums in another order)."""
    from algorithms.async_base import AsyncAlgorithm
    from algorithms.async_push import AsyncPush

    arrays = play(scenario(SCENARIOS["failures"]), 1)
    monkeypatch.setattr(AsyncPush, "on_mail", AsyncAlgorithm.on_mail)
    one_by_one = play(scenario(SCENARIOS["failures"]), 1)
    assert arrays.net.events.rows == one_by_one.net.events.rows
    torch.testing.assert_close(arrays.mass, one_by_one.mass, rtol=1e-4, atol=1e-5)
    assert (arrays.newest_id == one_by_one.newest_id).all()    # the same message per in-edge
