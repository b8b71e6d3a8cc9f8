"""The recorder of one (algorithm, seed) run: a callback of the run loop that writes its
evaluations (metrics.csv) and network rows (network.csv) as the run goes, keeps what the rounds'
reports say (:class:`ReportLog`) and, at the end, writes its arrays (``collab/``, ``links/``,
``effective/``, ``accounting/``, the algorithm's own) and trace."""
from __future__ import annotations

import numpy as np

from netsim.analysis.clocks import mean_accuracy
from netsim.results import NETWORK_COLUMNS, ResultsWriter
from netsim.running.callbacks import Callback, Diverged
from netsim.sim.facade import RoundReport
from netsim.sim.links_log import LinksLog
from netsim.util.progress import NoProgress, Progress


class ReportLog:
    """What the rounds' reports (:class:`RoundReport`) leave in the results: ``links/``, a row
    per round that played on the network (its client deliveries, none when it made no client
    exchange) once a round exchanged between clients; ``effective/``, the effective weights ``W``
    of the evaluated ``rounds`` (after round t: t + 1) with, for every round, their ``row_sum``
    and the report's ``extras``; for an event-driven run, ``staleness/`` (every merge's
    ``client``, ``time``, ``age`` and ``window``) and ``idle/`` (``idle`` [R, N] per window)."""

    def __init__(self, n: int):
        self.links = LinksLog(n)
        self.exchanged = False                       # some round exchanged between clients
        self.effective: list[np.ndarray] = []
        self.rounds: list[int] = []
        self.per_round: dict[str, list[np.ndarray]] = {}
        self.merges: list[dict[str, np.ndarray]] = []
        self.idle: list[np.ndarray] = []

    def add(self, report: RoundReport, evaluated: bool) -> None:
        """Keep round ``report.round``'s report; ``evaluated``: the loop evaluates after it."""
        if report.played:
            self.links.append(np.empty(0, np.int64) if report.links is None else report.links)
        self.exchanged |= report.links is not None
        values = dict(report.extras)
        if report.effective is not None:
            values = {"row_sum": report.effective.sum(1), **values}
            if evaluated:
                self.effective.append(report.effective.astype(np.float32))
                self.rounds.append(report.round + 1)
        for name, value in values.items():
            self.per_round.setdefault(name, []).append(value)
        if report.staleness is not None:
            window = np.full(len(report.staleness["age"]), report.round, np.int32)
            self.merges.append({**report.staleness, "window": window})
        if report.idle is not None:
            self.idle.append(report.idle)

    def arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """``{kind: {name: array}}``: ``links``, ``effective``, ``staleness`` and ``idle`` when
        they hold anything."""
        out = {}
        if self.exchanged:
            out["links"] = self.links.arrays()
        if self.effective:
            out["effective"] = {"W": np.stack(self.effective), "rounds": np.asarray(self.rounds),
                                **{k: np.stack(v) for k, v in self.per_round.items()}}
        if self.merges:
            out["staleness"] = {k: np.concatenate([m[k] for m in self.merges])
                                for k in self.merges[0]}
        if self.idle:
            out["idle"] = {"idle": np.stack(self.idle)}
        return out


class Recorder(Callback):
    """Collects one (algorithm, seed) run's evaluations, network rows, W and round reports (a
    callback of the run loop) and writes its arrays at the end (:meth:`finish`)."""

    def __init__(self, writer: ResultsWriter, label: str, seed: int, data,
                 progress: Progress | NoProgress):
        self.writer, self.label, self.seed = writer, label, seed
        self.progress = progress
        self.collab: list[np.ndarray] = []
        self.collab_rounds: list[int] = []
        self.final: dict[str, np.ndarray] = {}
        self.extras: dict[str, dict[str, np.ndarray]] = {}
        self.reports = ReportLog(len(data.cluster))
        self.sim_time = 0.0
        #: per evaluation: simulated time and mean test accuracy over clients (NaN without
        #: accuracy), for the time to accuracy (netsim.analysis.clocks)
        self.curve: list[tuple[float, float]] = []
        self._eval = {s: data.full(s) for s in ("val", "test")}
        #: clients without samples of a split: no score there (NaN, an empty cell of metrics.csv)
        self._empty = {s: (data.n[s] == 0).cpu().numpy() for s in self._eval}

    def on_eval(self, alg, rnd: int) -> None:
        """Evaluate every client's personalised model on its val and test split."""
        rows = []
        for split, (x, y, mask) in self._eval.items():
            acc, loss = alg.evaluate(x, y, mask)
            acc_np = None if acc is None else acc.detach().cpu().numpy()
            loss_np = loss.detach().cpu().numpy()
            bad = np.flatnonzero(~np.isfinite(loss_np))
            if bad.size:
                raise Diverged(rnd, int(bad[0]), f"{split} loss non-finite")
            empty = self._empty[split]
            if empty.any():
                loss_np = np.where(empty, np.nan, loss_np).astype(loss_np.dtype)
                if acc_np is not None:
                    acc_np = np.where(empty, np.nan, acc_np).astype(acc_np.dtype)
            for i in range(alg.n):
                rows.append((self.label, self.seed, rnd, alg.net.now, i, split,
                             None if acc_np is None else acc_np[i], loss_np[i]))
            if split == "test":
                self.curve.append((alg.net.now, mean_accuracy(acc_np)))
            self.final[split] = acc_np if acc_np is not None else -loss_np
            self.final[split + "_loss"] = loss_np
        self.writer.add_metrics(rows)
        w = alg.collaboration()
        if w is not None:
            self.collab.append(np.asarray(w, np.float32)[: alg.n, : alg.n])
            self.collab_rounds.append(rnd)
        self.sim_time = alg.net.now

    def on_report(self, alg, report: RoundReport) -> None:
        self.reports.add(report, alg.ctx.schedule.evaluates_after(report.round))

    def on_step(self, alg, row: dict) -> None:
        self.writer.add_network([(self.label, self.seed,          # then the engine row's columns
                                  *(row[c] for c in NETWORK_COLUMNS[2:]))])

    def state(self) -> dict:
        """What a checkpoint keeps of this recorder (restored into a fresh one on resume)."""
        return {k: self.__dict__[k]
                for k in ("collab", "collab_rounds", "curve", "final", "reports", "sim_time")}

    def restore(self, state: dict) -> None:
        """Go on from :meth:`state` of the interrupted run (``--resume``)."""
        self.__dict__.update(state)

    def on_round(self, alg, t: int) -> None:
        self.progress.advance()

    def finish(self, alg) -> None:
        if self.collab:
            self.writer.write_arrays("collab", self.label, self.seed, W=np.stack(self.collab),
                                     rounds=np.asarray(self.collab_rounds))
        self.extras = {**self.reports.arrays(), **alg.extra_arrays()}
        for kind, arrays in self.extras.items():
            self.writer.write_arrays(kind, self.label, self.seed, **arrays)
        per_node = alg.net.per_node()
        if per_node is not None:
            self.writer.write_arrays("accounting", self.label, self.seed, **per_node)
        if alg.net.trace is not None:
            path = self.writer.path("trace", f"{self.label}_seed{self.seed}.csv")
            path.parent.mkdir(exist_ok=True)
            alg.net.trace.write_csv(path)
