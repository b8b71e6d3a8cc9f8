"""The network's message store (netsim.sim.store): the newest copy of every sender's message at
every receiver, its age in the receiver's clock, the rows it carries, late messages that arrive
later, and the mix of the copies' rows that CoBo and DiPLe use."""
from __future__ import annotations

import numpy as np
import torch

from netsim.links.edges import Edges
from netsim.sim.store import MessageStore

N = 3
EDGES = Edges.from_matrix(~np.eye(N, dtype=bool))          # the complete graph, receiver-major


def on(*pairs) -> np.ndarray:
    """``bool[E]``: the edges ``(receiver, sender)``."""
    mask = np.zeros((N, N), bool)
    for i, j in pairs:
        mask[i, j] = True
    return EDGES.gather(mask)


def rows(k: float) -> torch.Tensor:
    """Sender j's row j: ``[k + 10 j, k + 10 j]``."""
    return torch.full((N, 2), k, dtype=torch.float64) + 10.0 * torch.arange(N)[:, None]


def test_a_receiver_holds_the_newest_copy_and_its_age_in_its_own_clock():
    store = MessageStore(EDGES)
    nothing = np.full(len(EDGES), np.nan)
    r0 = store.post(rows(0), 0)
    store.receive(on((0, 1), (0, 2), (1, 2)), None, nothing, 0.0, clock=0, rows=r0)
    r1 = store.post(rows(1), 1)
    store.receive(on((0, 2)), None, nothing, 1.0, clock=1, rows=r1)
    available, age = store.copies(2, max_age=1)
    held = EDGES.matrix(store.held, -1)
    assert held[0, 1] == r0 and held[0, 2] == r1 and held[1, 2] == r0 and held[2, 0] == -1
    assert EDGES.matrix(age, -1)[0].tolist() == [-1, -1, 1]            # (0, 1) is 2 old: unusable
    w = np.zeros((N, N))
    w[0, 2], w[1, 2] = 0.5, 1.0
    mixed = store.mix(w * EDGES.matrix(available, False), held)
    torch.testing.assert_close(mixed[0], 0.5 * rows(1)[2])
    assert not mixed[1].any() and not mixed[2].any()
    # each receiver's own clock: receiver 1 is 3 steps on, receiver 0 one
    assert EDGES.matrix(store.copies(np.array([1, 3, 0]), 5)[1], -1)[:2].tolist() == \
        [[-1, 1, 0], [-1, -1, 3]]


def test_a_late_copy_is_the_message_that_arrived():
    """Two exchanges of one round are late on the edge 2 -> 0; only the first has arrived when
    the third exchange ends: receiver 0 holds that message's rows (not the second's, still on
    its way), then the second's once it arrives; a message older than the copy held adds
    nothing."""
    store = MessageStore(EDGES)
    late, none = on((0, 2)), np.zeros(len(EDGES), bool)
    at = lambda t: np.where(late, t, np.nan)                        # noqa: E731
    r0 = store.post(rows(0), 0)
    store.receive(none, late, at(1.5), 1.0, clock=0, rows=r0)
    r1 = store.post(rows(1), 0)
    store.receive(none, late, at(2.5), 1.0, clock=0, rows=r1)
    store.post(rows(2), 1)
    store.receive(none, None, at(np.nan), 2.0, clock=1)
    assert EDGES.matrix(store.held, -1)[0, 2] == r0
    assert EDGES.matrix(store.copies(1, 1)[1], -1)[0, 2] == 1
    store.receive(none, None, at(np.nan), 3.0, clock=1)
    assert EDGES.matrix(store.held, -1)[0, 2] == r1
    store.receive(none, late, at(4.5), 3.0, clock=2, rows=store.post(rows(3), 2))
    r4 = store.post(rows(4), 2)
    store.receive(late, None, at(np.nan), 4.0, clock=2, rows=r4)
    store.receive(none, None, at(np.nan), 5.0, clock=2)            # the older message arrives
    assert EDGES.matrix(store.held, -1)[0, 2] == r4


def test_rows_no_usable_copy_refers_to_are_dropped_at_the_next_post():
    """With copies at most 1 round old, a post in round 2 keeps the rows of round 1 (and the
    new ones), not those of round 0; forget drops everything."""
    store = MessageStore(EDGES)
    nothing = np.full(len(EDGES), np.nan)
    for clock, edge in enumerate([(0, 1), (1, 0)]):
        rid = store.post(rows(clock), clock)
        store.receive(on(edge), None, nothing, 0.0, clock=clock, rows=rid)
        store.copies(clock, max_age=1)
    r2 = store.post(rows(2), 2)
    assert sorted(store.posted) == [r2 - 1, r2]
    store.forget()
    assert not store.posted and (store.held == -1).all() and not store.copies(2, 5)[0].any()
