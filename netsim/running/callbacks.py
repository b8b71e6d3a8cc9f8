"""The hooks of the run loop (:func:`netsim.running.loop.run_loop`) and the exception that stops a
run.

Recording (metrics, network rows, arrays), progress, the divergence check and checkpoints are
callbacks; so is anything a user adds (``netsim.run(..., callbacks=...)``)::

    on_start(alg)           before round 0
    on_eval(alg, r)         evaluation due after r rounds (r = 0: the initial models)
    on_report(alg, report)  round t's report (netsim.sim.facade.RoundReport: links, effective W)
    on_step(alg, row)       the engine closed the round's accounting (its network.csv row)
    on_round(alg, t)        round t (0-based) done; raise Diverged to stop the run
    on_round_end(alg, t)    round t and its evaluation done (checkpoints)
    on_end(alg)             after the last round
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netsim.sim.facade import RoundReport


class Diverged(Exception):
    """An algorithm's state became non-finite: ``round``, ``client`` and ``what`` say where."""

    def __init__(self, round: int, client: int, what: str):
        super().__init__(f"diverged at round {round}: client {client}'s {what}")
        self.round, self.client, self.what = round, client, what

    def record(self, seed: int) -> dict:
        """The summary.json entry of this divergence."""
        return {"seed": seed, "round": self.round, "client": self.client, "what": self.what}


class Callback:
    """Hooks of :func:`netsim.running.loop.run_loop`; each does nothing unless overridden."""

    def on_start(self, alg) -> None: ...

    def on_eval(self, alg, rnd: int) -> None: ...

    def on_report(self, alg, report: RoundReport) -> None: ...

    def on_step(self, alg, row: dict) -> None: ...

    def on_round(self, alg, t: int) -> None: ...

    def on_round_end(self, alg, t: int) -> None: ...

    def on_end(self, alg) -> None: ...
