"""The network metrics are declared once (netsim.sim.accounting): network.csv's columns,
summary.json's run totals and docs/results_format.md's list follow the declaration."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from helpers import TINY
from netsim import Scenario, run
from netsim.results import NETWORK_COLUMNS
from netsim.sim.accounting import METRIC_NAMES, NETWORK_METRICS, doc_lines, run_totals

DOC = Path(__file__).resolve().parent.parent / "docs" / "results_format.md"


def _total(metric, rows: pd.DataFrame) -> float | None:
    """A metric's run total recomputed from network.csv's rows."""
    if metric.aggregate == "sum":
        return rows[metric.name].sum()
    if metric.aggregate == "max":
        return rows[metric.name].max()
    weights = rows[metric.weight]
    return None if not weights.sum() else (rows[metric.name] * weights).sum() / weights.sum()


def test_network_csv_and_summary_hold_every_declared_metric(tmp_path):
    """A peer budget of one blocks messages: messages_blocked is written and totalled too."""
    sc = Scenario(TINY).with_overrides({"algorithms": ["sgp", "fedavg"],
                                        "network.budget.peers_per_round": 1})
    res = run(sc, out=tmp_path, quiet=True)
    net = res.network
    assert tuple(net.columns) == NETWORK_COLUMNS
    assert NETWORK_COLUMNS == ("algorithm", "seed", "round", "sim_time", *METRIC_NAMES)
    assert net["messages_blocked"].sum() > 0
    for label, rows in net.groupby("algorithm"):
        entry = res.summary["algorithms"][label]
        for metric in NETWORK_METRICS:
            want = _total(metric, rows)
            for got in (entry[metric.name], entry["per_seed"]["0"][metric.name]):
                assert got == (None if want is None else pytest.approx(want, rel=1e-5)), \
                    (label, metric.name)


def test_run_totals_follow_each_aggregate():
    rows = [{"bytes_sent": 1.5, "messages_sent": 2, "messages_delivered": 0,
             "messages_dropped": 1, "messages_blocked": 3, "mean_latency": math.nan,
             "max_staleness": 2},
            {"bytes_sent": 2.0, "messages_sent": 4, "messages_delivered": 3,
             "messages_dropped": 0, "messages_blocked": 0, "mean_latency": 0.5,
             "max_staleness": 1}]
    assert run_totals(rows) == {"bytes_sent": 3.5, "messages_sent": 6, "messages_delivered": 3,
                                "messages_dropped": 1, "messages_blocked": 3,
                                "mean_latency": 0.5, "max_staleness": 2}
    assert run_totals(rows[:1])["mean_latency"] is None                    # nothing delivered
    assert run_totals([]) == {**dict.fromkeys(METRIC_NAMES, 0), "bytes_sent": 0.0,
                              "mean_latency": None}


def test_results_format_lists_the_declared_metrics():
    """docs/results_format.md's network.csv entry: the leading columns, then exactly the lines
    :func:`doc_lines` writes from the declaration."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("- `network.csv`"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("- "))
    entry = lines[start:end]
    assert " ".join(entry).count("`" + ", ".join(NETWORK_COLUMNS[:4]) + "`") == 1
    assert [line for line in entry if line.startswith("  - ")] == doc_lines()


def test_a_network_csv_of_an_earlier_netsim_is_still_read():
    """A folder written before a metric was declared (network.csv without it) is read by
    ``netsim analyze`` and ``netsim figures``; a table with unknown columns is not."""
    from netsim.results.readable import _readable

    earlier = [c for c in NETWORK_COLUMNS if c != "messages_blocked"]
    assert _readable(",".join(earlier), NETWORK_COLUMNS)
    assert _readable(",".join(NETWORK_COLUMNS), NETWORK_COLUMNS)
    assert not _readable(",".join([*earlier, "bogus"]), NETWORK_COLUMNS)
    assert not _readable(",".join(reversed(NETWORK_COLUMNS)), NETWORK_COLUMNS)
