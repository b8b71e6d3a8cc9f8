"""CoBo over lossy links (docs/papers/cobo.md, "Links"): the 3-message relay protocol and the
completion-rate correction of the W step."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from algorithms.cobo_pairs import SCALAR_BYTES
from helpers import DIGITS, build, play, spy_commits

RELAY = {"algorithms.cobo.protocol": "relay"}


def spy_exchanges(alg, edit=None):
    """Record every exchange result of ``alg``; ``edit(k, result)`` may alter the k-th of a round."""
    got = []
    inner = alg.exchange

    def spy(request, nbytes, **kw):
        r = inner(request, nbytes, **kw)
        if edit is not None:
            edit(len(got), r)
        got.append(r)
        return r

    alg.exchange = spy
    return got


@pytest.mark.parametrize("protocol", ["exchange", "relay"])
def test_message_and_byte_count_per_round(protocol):
    """All 15 pairs of 6 clients on perfect links, d-float model of S bytes: exchange = 30 models
    + 30 gradients (4 messages a pair, two of them also serve the penalty); relay = 30 models +
    15 replies [x_j, h_j] (2 S each) + 15 inner products (3 messages a pair)."""
    alg = build(DIGITS, {"network.links": "always", "algorithms.cobo.protocol": protocol})
    got = spy_exchanges(alg)
    report = play(alg, range(1))[0]
    row, size = alg.net.history[-1], alg.bank.size_bytes
    sent = [int(r.sent.sum()) for r in got]
    per_sender = [r.bytes_sent.sum() for r in got]
    if protocol == "exchange":
        assert sent == [30, 30] and per_sender == [30 * size, 30 * size]
    else:
        assert sent == [30, 15, 15]
        assert per_sender == [30 * size, 15 * 2 * size, 15 * SCALAR_BYTES]
    assert row["messages_sent"] == row["messages_delivered"] == sum(sent)
    assert row["bytes_sent"] == pytest.approx(sum(per_sender))
    assert report.extras["pair_updates"] == 15


def test_relay_on_perfect_links_is_the_exchange():
    """With every message delivered, relay computes the same W and models as the exchange."""
    a = build(DIGITS, {"network.links": "always"})
    b = build(DIGITS, {"network.links": "always", **RELAY})
    play(a, range(5))
    play(b, range(5))
    np.testing.assert_array_equal(a.W, b.W)
    assert (a.W < 1).any()
    torch.testing.assert_close(a.bank.flat, b.bank.flat)


def test_lost_last_message_updates_neither_end():
    """Drop the inner product of one pair (message 3): that pair keeps w on both ends, the others
    update; a pair whose reply is lost stops before message 3."""
    dropped = {}

    def edit(k, r):
        if k == 2:                                       # the round's third exchange: messages 3
            d, s = np.nonzero(r.delivered)
            dropped["pair"] = (int(d[0]), int(s[0]))
            r.delivered[d[0], s[0]] = False

    alg = build(DIGITS, {"network.links": "always", **RELAY})
    got = spy_exchanges(alg, edit)
    pairs = spy_commits(alg)
    before = alg.W.copy()
    play(alg, range(1))
    i, j = dropped["pair"]
    assert len(got) == 3 and got[2].requested.sum() == 15
    assert alg.W[i, j] == before[i, j] and alg.W[j, i] == before[j, i]
    assert pairs[-1][0].size == 14
    assert (min(i, j), max(i, j)) not in set(zip(*pairs[-1]))
    changed = np.argwhere(alg.W != before)
    assert len(changed) > 0 and (i, j) not in set(map(tuple, changed))
    np.testing.assert_array_equal(alg.W, alg.W.T)


def test_relay_roles_completion_rate_and_fresh_copies_on_lossy_links():
    """p = 0.5: the responder is an end that received the other's model, a pair updates only if
    its reply and inner product arrived; about (1 - (1 - p)^2) p^2 = 3/16 of the sampled pairs
    complete (exchange: p^4 = 1/16), and the reply's model is used in the penalty."""
    rates = {}
    for protocol in ("exchange", "relay"):
        alg = build(DIGITS, {"schedule.rounds": 40, "algorithms.cobo.protocol": protocol})
        got = spy_exchanges(alg)
        pairs = spy_commits(alg)
        sampled = completed = 0
        for t in range(40):
            start = len(got)
            report = play(alg, range(t, t + 1))[0]
            models = got[start]
            a, b = pairs[-1]
            sampled, completed = sampled + 15, completed + a.size
            if protocol == "relay" and a.size:
                reply, back = got[start + 1], got[start + 2]
                for x, y in zip(a, b):
                    # (init, resp) is (x, y) or (y, x): resp got init's model, init the reply,
                    # resp the inner product
                    ok = [models.delivered[r, i] and reply.delivered[i, r] and back.delivered[r, i]
                          for i, r in ((x, y), (y, x))]
                    assert any(ok)
                fresh = reply.delivered
                eff = np.where(models.available | fresh, alg.W, 0.0)
                np.fill_diagonal(eff, 0.0)
                np.testing.assert_array_equal(report.effective, eff)
                # the reply is not logged: links/ holds the model exchange's deliveries
                np.testing.assert_array_equal(
                    report.links, models.edges.key[models.per_edge["delivered"]])
        rates[protocol] = completed / sampled
    assert 0.03 < rates["exchange"] < 0.10
    assert 0.13 < rates["relay"] < 0.25


def test_completion_rate_scales_the_step_by_the_pair_history():
    """completion: rate -- step gamma ip (s + 1) / (c + 1) with s sampled, c completed."""
    alg = build(DIGITS, {"algorithms.cobo.completion": "rate", "algorithms.cobo.gamma": 0.01})
    alg.sampled[0, 1], alg.completed[0, 1] = 15, 0       # 15 tries, this one the first success
    alg.sampled[2, 3], alg.completed[2, 3] = 3, 2
    alg.W[:] = 0.5
    alg.update_w(np.array([0, 2]), np.array([1, 3]), np.array([-1.0, 2.0]))
    assert alg.W[0, 1] == alg.W[1, 0] == pytest.approx(0.5 - 0.01 * 16 / 2)
    assert alg.W[2, 3] == alg.W[3, 2] == pytest.approx(0.5 + 0.02 * 4 / 4)
    assert alg.completed[0, 1] == 1 and alg.completed[2, 3] == 3
