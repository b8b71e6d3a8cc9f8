"""The ``trace`` link model: intervals replayed exactly, availability, one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

from netsim.errors import ConfigError
from netsim.links import make_links, validate_links

TRACE = """# a comment
src,dst,start,end
0,1,0.0,2.0
0,1,1.0,3.0
2,1,1.5,inf
"""


def trace_links(tmp_path, text=TRACE, n=3, **params):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    spec = validate_links({"name": "trace", "path": str(path), **params}, "network.links", n)
    return make_links(spec, ~np.eye(n, dtype=bool), np.random.default_rng(0))


def edges(up: np.ndarray) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(up))}


def test_links_are_up_exactly_during_their_intervals(tmp_path):
    model = trace_links(tmp_path)
    assert edges(model.up(0.0)) == {(0, 1)}
    assert edges(model.up(1.7)) == {(0, 1), (2, 1)}
    assert edges(model.up(3.0)) == {(2, 1)}                      # [start, end): 3.0 is out
    assert edges(model.up(1e6)) == {(2, 1)}                      # end = inf
    # union of [0, 2) and [1, 3) over the horizon 3 (the last finite end); inf -> from 1.5 on
    expected = np.zeros((3, 3))
    expected[0, 1], expected[2, 1] = 1.0, 0.5
    np.testing.assert_allclose(model.availability(), expected)


def test_symmetric_absent_up_and_period(tmp_path):
    sym = trace_links(tmp_path, symmetric=True)
    assert edges(sym.up(0.5)) == {(0, 1), (1, 0)}
    up = trace_links(tmp_path, absent="up")
    assert edges(up.up(5.0)) == {(0, 2), (1, 0), (1, 2), (2, 0), (2, 1)}   # 0->1 listed: down
    assert up.availability()[1, 2] == 1.0
    looped = trace_links(tmp_path, period=4.0)
    assert edges(looped.up(4.5)) == edges(looped.up(0.5)) == {(0, 1)}
    assert looped.availability()[0, 1] == pytest.approx(3 / 4)


def test_the_base_graph_bounds_the_trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(TRACE)
    spec = validate_links({"name": "trace", "path": str(path)}, "network.links", 3)
    ring = np.zeros((3, 3), bool)
    ring[1, 2] = ring[2, 0] = ring[0, 1] = True
    model = make_links(spec, ring, np.random.default_rng(0))
    assert edges(model.up(1.7)) == {(0, 1)}


@pytest.mark.parametrize("text, hint", [
    ("a,b,c,d\n0,1,0,1\n", "line 1: not the header"),
    ("src,dst,start,end\n0,1,0,1\n0,3,0,1\n", "line 3: '0,3,0,1'"),       # node 3 of n = 3
    ("src,dst,start,end\n0,1,2,1\n", "line 2: '0,1,2,1'"),                # start >= end
    ("src,dst,start,end\n0,1,x,1\n", "line 2: '0,1,x,1'"),
])
def test_bad_files_get_one_line_errors(tmp_path, text, hint):
    with pytest.raises(ConfigError) as err:
        trace_links(tmp_path, text)
    msg = str(err.value)
    assert msg.startswith("network.links.path: got ") and msg.endswith(f"({hint})")
    assert "src,dst,start,end" in msg and "\n" not in msg


def test_missing_file_names_the_field():
    with pytest.raises(ConfigError, match=r"^network\.links\.path: got 'nope\.csv'; allowed: an "
                       r"existing CSV file \(not found\)$"):
        validate_links({"name": "trace", "path": "nope.csv"}, "network.links", 4)
