"""Append-only row tables (metrics.csv, network.csv) and the compact links log (netsim.results):
the files equal a whole file written at once, a resume drops what was appended after the
checkpoint, and large-N links are stored as edge lists."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from test_resume import TINY, Crash, CrashAt, files, summary

from netsim import Scenario, run
from netsim.results import METRIC_COLUMNS, NETWORK_COLUMNS, Results, ResultsWriter, _csv_text
from netsim.sim.links_log import LINKS_DENSE_MAX, LinksLog, links_delivered

SHORT = {"schedule.rounds": 4, "algorithms": ["sgp", "fedavg"], "outputs.checkpoint_every": 1}


def test_appended_tables_equal_a_whole_file(tmp_path):
    res = run(Scenario(TINY).with_overrides(SHORT), seeds=[0, 1], out=tmp_path, quiet=True)
    for name, columns in (("metrics", METRIC_COLUMNS), ("network", NETWORK_COLUMNS)):
        text = (res.dir / f"{name}.csv").read_text()
        header, *rows = list(csv.reader(text.splitlines()))
        assert tuple(header) == columns and len(rows) > 8
        assert text == _csv_text(columns, rows)


def test_writer_creates_then_appends(tmp_path):
    cfg = Scenario(TINY).resolve()
    writer = ResultsWriter(tmp_path, cfg, [0])
    rows = [("sgp", 0, r, 0.5 * r, 10, 2, 2, 0, 0, float("nan"), None) for r in range(3)]
    writer.add_network(rows[:1])
    path = writer.dir / "network.csv"
    assert path.read_text() == _csv_text(NETWORK_COLUMNS, [("sgp", 0, 0, 0, 10, 2, 2, 0, 0, "", "")])
    writer.add_network(rows[1:])
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and lines[-1] == "sgp,0,2,1,10,2,2,0,0,,"
    assert not (writer.dir / "metrics.csv").exists()                 # created at its first rows


def test_a_replaced_table_is_appended_to_in_its_new_file(tmp_path):
    """The writer keeps a table open for appending; rewriting the table (a resume) closes it, and
    the next rows go to the new file; close() closes every table."""
    writer = ResultsWriter(tmp_path, Scenario(TINY).resolve(), [0])
    rows = [("sgp", 0, r, r, 10, 2, 2, 0, 0, 1, 2) for r in range(4)]
    writer.add_network(rows[:1])
    writer.add_network(rows[1:2])
    writer.write("network.csv", _csv_text(NETWORK_COLUMNS, rows[:1]))
    writer.add_network(rows[2:])
    path = writer.dir / "network.csv"
    assert path.read_text() == _csv_text(NETWORK_COLUMNS, [rows[0], *rows[2:]])
    writer.close()
    assert not writer._appending


def test_resume_drops_rows_appended_after_the_checkpoint(tmp_path):
    sc = Scenario(TINY).with_overrides(SHORT)
    full = run(sc, seeds=[0, 1], out=tmp_path / "full", quiet=True).dir
    part = tmp_path / "part"
    with pytest.raises(Crash):          # sgp seed 1 (third run) after round 3: checkpoint at 2
        run(sc, seeds=[0, 1], out=part, quiet=True, resume=True, callbacks=[CrashAt(2, 3)])
    folder = part / "resume"
    for name in ("metrics.csv", "network.csv"):                     # a kill -9 mid-write
        with (folder / name).open("a") as fh:
            fh.write("sgp,1,99,9.9,0,0,0,0,,\nsgp,1,1")
    res = run(sc, seeds=[0, 1], out=part, quiet=True, resume=True).dir
    assert files(res) == files(full)
    assert summary(res) == summary(full)


@pytest.mark.parametrize("n", [6, LINKS_DENSE_MAX + 1])
def test_links_log_round_trips(tmp_path, n):
    rng = np.random.default_rng(0)
    rounds = [rng.random((n, n)) < p for p in (0.5, 0.01, 0.0)]     # packed, edges, empty
    log = LinksLog(n)
    for d in rounds:
        log.append(np.flatnonzero(d))
    assert [log.stored[r].dtype.kind for r in range(3)] == ["u", "i", "i"]
    for r, d in enumerate(rounds):
        np.testing.assert_array_equal(log[r], d)
    arrays = log.arrays()
    assert ("delivered" in arrays) == (n <= LINKS_DENSE_MAX)
    np.testing.assert_array_equal(links_delivered(arrays), np.stack(rounds))
    writer = ResultsWriter(tmp_path, Scenario(TINY).resolve(), [0])
    writer.write_arrays("links", "sgp", 0, **arrays)
    np.testing.assert_array_equal(Results(writer.dir).arrays("links", "sgp", 0)["delivered"],
                                  np.stack(rounds))


def test_sparse_links_log_is_bounded_by_its_edges():
    n = 2000
    log = LinksLog(n)
    d = np.zeros((n, n), bool)
    d[np.arange(n), (np.arange(n) + 1) % n] = True                     # a directed ring
    for _ in range(5):
        log.append(np.flatnonzero(d))
    assert sum(r.nbytes for r in log.stored) == 5 * n * 4             # int32 edges, not n * n
    arrays = log.arrays()
    assert arrays["receiver"].size == 5 * n and list(arrays["offsets"]) == [0, *range(n, 6 * n, n)]
