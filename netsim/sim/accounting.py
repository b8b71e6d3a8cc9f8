"""The network metrics of a run, declared once.

The engine counts each metric per round in its round book (netsim/sim/engine.py), whose ``row()``
holds every metric declared here; network.csv has a column per metric
(netsim.results.NETWORK_COLUMNS); summary.json has each metric's total over the run
(:func:`run_totals`, by its ``aggregate``); and docs/results_format.md lists them as
:func:`doc_lines` writes them (tests/test_network_metrics.py checks the page). Adding a metric:
declare it in :data:`NETWORK_METRICS` and count it in the round book.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

#: how a metric's per-step values make its total over a run
Aggregate = Literal["sum", "max", "mean"]


@dataclass(frozen=True)
class NetworkMetric:
    """One network metric: its ``name`` (a network.csv column and a summary.json key), Python
    ``kind`` (``int`` or ``float``), ``unit``, ``aggregate`` over a run (``mean``: weighted by
    the metric ``weight``, none where the weights sum to 0) and a one-line ``doc``."""

    name: str
    kind: type
    unit: str
    aggregate: Aggregate
    doc: str
    weight: str | None = None

    def total(self, rows: Sequence[dict]) -> int | float | None:
        """This metric over a run's accounting rows (the engine's ``history``)."""
        values = [row[self.name] for row in rows]
        if self.aggregate == "sum":
            return self.kind(sum(values))
        if self.aggregate == "max":
            return self.kind(max(values, default=0))
        weights = [row[self.weight] for row in rows]
        if not sum(weights):
            return None
        return self.kind(sum(v * w for v, w in zip(values, weights) if w) / sum(weights))


NETWORK_METRICS = (
    NetworkMetric("bytes_sent", float, "bytes", "sum",
                  "bytes of the messages that left their sender"),
    NetworkMetric("messages_sent", int, "messages", "sum",
                  "messages that left their sender (link up, not refused by a budget)"),
    NetworkMetric("messages_delivered", int, "messages", "sum",
                  "messages that arrived before their receiver stopped waiting"),
    NetworkMetric("messages_dropped", int, "messages", "sum",
                  "messages lost in transit or arrived after their receiver stopped waiting"),
    NetworkMetric("messages_blocked", int, "messages", "sum",
                  "messages refused by a budget (peers or bytes) over an up link"),
    NetworkMetric("mean_latency", float, "s", "mean",
                  "mean time from the sender being ready to the arrival over the delivered "
                  "messages (empty, and null in summary.json, when none)",
                  weight="messages_delivered"),
    NetworkMetric("max_staleness", int, "rounds", "max",
                  "largest age of a copy a receiver could use (0: only this round's)"),
)
#: the metrics' names, in network.csv's order
METRIC_NAMES = tuple(m.name for m in NETWORK_METRICS)


def run_totals(rows: Sequence[dict]) -> dict[str, int | float | None]:
    """Every metric's total over a run's accounting rows: summary.json's network part."""
    return {m.name: m.total(rows) for m in NETWORK_METRICS}


def doc_lines() -> list[str]:
    """docs/results_format.md's list of the metrics, one Markdown item per metric."""
    how = {"sum": "sum", "max": "largest", "mean": "mean weighted by `{weight}`"}
    return [f"  - `{m.name}` ({m.kind.__name__}, {m.unit}; run total: "
            f"{how[m.aggregate].format(weight=m.weight)}): {m.doc}" for m in NETWORK_METRICS]
