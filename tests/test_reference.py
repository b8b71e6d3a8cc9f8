"""The generated reference (netsim/cli/reference.py): docs/reference.md is current, every analysis
column has a definition, only shipped components are listed, and table cells stay cells."""
from __future__ import annotations

import difflib
import re

import numpy as np
import pandas as pd

from netsim.analysis import community_analysis, graph_metrics, group_shares, link_metrics
from netsim.analysis.columns import COLUMNS
from netsim.analysis.series import time_to_target
from netsim.analysis.table import TABLE_ROWS
from netsim.cli import reference
from netsim.schema import Field
from netsim.schema.registry import Registry


def test_committed_reference_is_current():
    committed = reference.DEFAULT_OUT.read_text(encoding="utf-8")
    fresh = reference.render()
    if committed != fresh:
        diff = "\n".join(list(difflib.unified_diff(committed.splitlines(), fresh.splitlines(),
                                                   "committed", "generated", lineterm=""))[:40])
        raise AssertionError(f"docs/reference.md is stale: run `{reference.COMMAND}` (or "
                             f"`python -m netsim.cli.reference`) and commit it\n{diff}")


def test_every_analysis_column_is_defined():
    rng = np.random.default_rng(0)
    W = rng.random((6, 6)) * (rng.random((6, 6)) < 0.5)
    cluster = np.array([0, 0, 0, 1, 1, 1])
    group = ["benign"] * 3 + ["malicious"] * 3
    curve = pd.DataFrame({"value": [0.1, 0.9], "sim_time": [0.0, 1.0], "round": [0, 5]})
    produced = {*graph_metrics(W), *community_analysis(W, cluster), *time_to_target(curve, 0.5),
                *link_metrics(rng.random((4, 6, 6)) < 0.5), *TABLE_ROWS}
    shares = set(group_shares(W, group))
    assert shares and all(re.fullmatch(r"share_\w+_uses_\w+", k) for k in shares)
    assert produced - set(COLUMNS) == set()


def _component(reg: Registry, name: str, module: str, fields: dict) -> None:
    def fn():
        """A test component."""
    fn.__module__ = module
    reg.register(name, fields)(fn)


def test_only_shipped_components_are_listed():
    reg = Registry("widget")
    _component(reg, "shipped", "netsim.links.widgets", {"k": Field("int", 3, "a count", lo=1)})
    _component(reg, "mine", "my_script", {})
    text = "\n".join(reference.registry_section("Widgets", "network.widget", reg, "test."))
    assert "`shipped`" in text and "`netsim/links/widgets.py`" in text
    assert "mine" not in text
    assert "| `k` | `3` | an int >= 1 | a count |" in text


def test_table_cells_escape_pipes_and_tags():
    row = reference.field_table({"x": Field("str", "a|b", "either a|b, see <name>")})[2]
    assert len(re.findall(r"(?<!\\)\|", row)) == 5          # four cells, unbroken
    assert "&lt;name>" in row and "`a\\|b`" in row
