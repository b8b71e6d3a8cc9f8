"""SGP's synchronous rounds in the event-driven engine (Assran, Loizou, Ballas & Rabbat, ICML
2019, Algorithm 1, with one gossip neighbour set per round: the round engine's ``sgp``), the
reference point of the asynchronous methods (docs/async.md).

Client i's round r, at its own clock: it sums in the push-sum shares its in-neighbours sent in
round r - 1 (running sums, as :mod:`algorithms.async_push`), computes its gradient at
``z_i = x_i / w_i`` for as long as the compute model says, takes the step and pushes its shares
to its out-neighbours; then it waits until every in-neighbour's round-r message is resolved
(:mod:`algorithms.round_barrier`: delivered, dropped, or known not to come; with inboxes where
every downlink serves at once) and starts round r + 1. A message from an in-neighbour already in
a later round is kept until the round it belongs to. So the models are those of synchronous SGP
whose round-r mixing uses exactly the round-r messages that arrive (the round engine's
``wait_all``), while the clock of each client is its own: a straggler holds back only the
clients that wait for it.
"""
from __future__ import annotations

from algorithms import register
from algorithms.async_push import AsyncPush
from algorithms.round_barrier import SynchronousRounds


@register("sync_sgp")
class SyncSGP(SynchronousRounds, AsyncPush):
    """Synchronous SGP, each client waiting for its round's messages, event by event.
    No parameters of its own: alpha is ``train.lr``."""

    mail_on_wake = False                        # unless every downlink serves at once

    def __init__(self, ctx):
        super().__init__(ctx)
        self.init_rounds()

    def start_step(self, i: int, t: float, k: int) -> None:
        """Round r = ``steps_done[i]``: the messages of the earlier rounds count (the newest
        per in-edge), later ones wait."""
        r = int(self.steps_done[i])
        used = self.take_held(i, lambda q: q < r)
        if used is not None:
            AsyncPush.on_mail(self, used)
        super().start_step(i, t, k)

    def finish_step(self, i: int, t: float) -> None:
        out, outcome, _, row = self.push(i, t)
        self.round_sent(i, t, out, outcome, row)
