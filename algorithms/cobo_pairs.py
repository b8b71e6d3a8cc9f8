"""CoBo's pair protocols: the messages of Client-Selection over the simulated network (Hashemi,
He, Jaggi, NeurIPS 2024; Alg. 1 lines 10-13, eq. (1)/(4);
docs/specifications/cobo.md#network-assumptions). A helper module of ``algorithms/cobo.py`` (no
algorithm here).

Each function plays the messages of the sampled pairs (i, j), i < j, after the round's model
exchange ``models`` and returns the pairs ``(a, b)`` whose W update completes this round -- every
one of their messages arrived -- for :meth:`algorithms.cobo.CoBo.commit` to apply
``w_ab <- Proj(w_ab + gamma <h_a, h_b>)`` on both ends. Neither computes a gradient: the midpoint
gradients ``h = grad f(z_ab; xi)`` are one batched call in the commit; here they cost simulated
compute (one local step per gradient) and their messages' bytes. A pair message is sent only
after the sender's model of the round reached its receiver (or, the relay's reply, carries it),
so it leaves the receiver holding that model: it carries the model exchange's rows
(``models.payload``) in the network's message store.

- :func:`exchange_pairs` (``protocol: exchange``, the paper's semantics, 4 messages): both
  models, then both midpoint gradients;
- :func:`relay_pairs` (``protocol: relay``, 3 messages): one model, the reply ``[x_j, h_j]``,
  the inner product back.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np

from algorithms.base import Algorithm
from netsim.sim.facade import ExchangeResult

#: the pair messages of CoBo's ``protocol`` parameter
PairProtocol = Literal["exchange", "relay"]
SCALAR_BYTES = 8          # relay: the inner product <h_i, h_j> sent back (one float64)


def exchange_pairs(alg: Algorithm, pairs: np.ndarray, models: ExchangeResult,
                   model_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """The 4-message exchange: the sampled pairs whose two models arrived (``models``) compute
    their midpoint gradients and exchange them; a pair completes if both gradients arrive."""
    pairs = pairs & models.delivered & models.delivered.T
    a, b = np.nonzero(pairs)
    if a.size:
        count = np.bincount(np.r_[a, b], minlength=alg.n)
        comp = alg.compute_phase(active=count > 0, steps=count)
        fin = comp.finished
        req = np.zeros((alg.n, alg.n), bool)
        req[a, b], req[b, a] = fin[b], fin[a]
        grads = alg.exchange(req, model_bytes, ready=comp.finish_time, rows=models.payload)
        both = grads.delivered[a, b] & grads.delivered[b, a]
        a, b = a[both], b[both]
    return a, b


def relay_pairs(alg: Algorithm, pairs: np.ndarray, models: ExchangeResult,
                model_bytes: int) -> tuple[np.ndarray, np.ndarray, ExchangeResult]:
    """Client-Selection with three messages per sampled pair (``protocol: relay``).

    1. the model exchange ``models``: the *responder* r is the end that received the other end's
       (the *initiator* i's) model ``x_i`` -- for a pair i < j, j if ``x_i`` reached j, else i
       if ``x_j`` reached i, else the pair stops;
    2. r computes ``h_r = grad f_r(z_ir; xi_r)`` at ``z_ir = (x_i + x_r)/2`` and replies with
       ``[x_r, h_r]`` (2d floats);
    3. i, holding both models, computes ``h_i = grad f_i(z_ir; xi_i)`` and the alignment
       ``<h_i, h_r>`` (cosine with ``similarity: cosine``) and sends that one number back
       (``SCALAR_BYTES``).
    Both ends apply ``w_ir <- Proj(w_ir + gamma <h_i, h_r>)`` exactly when message 3 arrives
    (it arrives only if 1 and 2 did), so a pair completes with probability
    ``(1 - (1 - p)^2) p^2`` on Bernoulli(p) links instead of ``p^4``. The simulator commits
    both ends atomically on the delivery of message 3: i does not observe that delivery, so a
    deployment would apply the update at i only when r confirms it (e.g. on r's next
    message); the 4-message exchange makes the same idealisation (an end does not observe
    whether its own gradient arrived). The reply's ``x_r`` is a fresh copy for i's penalty
    this round (returned as the updated model-exchange result).

    Returns the completed pairs ``(lo, hi)`` in row-major order (as :func:`exchange_pairs`) and
    the updated model exchange.
    """
    n = alg.n
    a, b = np.nonzero(pairs)
    got_b, got_a = models.delivered[b, a], models.delivered[a, b]
    ok = got_b | got_a
    init = np.where(got_b, a, b)[ok]
    resp = np.where(got_b, b, a)[ok]
    fresh = np.zeros((n, n), bool)
    if init.size:
        comp = alg.compute_phase(active=np.bincount(resp, minlength=n) > 0,
                                 steps=np.bincount(resp, minlength=n))
        req = np.zeros((n, n), bool)
        req[init, resp] = comp.finished[resp]
        reply = alg.exchange(req, 2 * model_bytes, ready=comp.finish_time, rows=models.payload,
                             logged=False)           # links/ holds the model exchange's graph
        got = reply.delivered[init, resp]
        fresh[init[got], resp[got]] = True
        init, resp = init[got], resp[got]
    if init.size:
        steps = np.bincount(init, minlength=n)
        comp = alg.compute_phase(active=steps > 0, steps=steps)
        req = np.zeros((n, n), bool)
        req[resp, init] = comp.finished[init]
        back = alg.exchange(req, SCALAR_BYTES, ready=comp.finish_time, rows=models.payload)
        done = back.delivered[resp, init]
        init, resp = init[done], resp[done]
    lo, hi = np.minimum(init, resp), np.maximum(init, resp)
    order = np.lexsort((hi, lo))
    return lo[order], hi[order], replace(models, available=models.available | fresh,
                                         staleness=np.where(fresh, 0, models.staleness),
                                         held=np.where(fresh, models.payload, models.held))
