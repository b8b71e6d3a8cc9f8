"""The scenario scripts in scenarios/*.py run on their short schedules through the Python API."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import netsim

SCRIPTS = Path(__file__).resolve().parent.parent / "scenarios"


def script(name: str):
    """Import scenarios/NAME.py once (its registrations happen once per process)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("scripts")


def test_link_failure_study(out, capsys):
    study = script("link_failure_study").main(["--short", "--out", str(out)])
    cells = study.cells
    assert set(cells["algorithm"]) == {"sgp", "dpsgd", "diple", "pdbo_mtl"}
    assert sorted(set(cells["network.links.p"])) == [0.2, 1.0] and (cells["n_seeds"] == 1).all()
    assert cells["mean_accuracy"].between(0, 1).all()
    assert (study.dir / "figures" / "link_failure_study.pdf").is_file()
    assert repr(study).endswith(": 8 runs: 8 done)")
    again = netsim.run_sweep(study.dir / "sweep.yaml", quiet=True, out=out)  # resumes: 0 to run
    assert again.table.equals(study.table)


def test_trace_replay(out, capsys):
    results = script("trace_replay").main(["--short", "--out", str(out)])
    traced, iid = results["trace_replay"], results["trace_replay_bernoulli"]
    assert traced.config["network"]["links"]["name"] == "trace"
    p = iid.config["network"]["links"]["p"]
    assert p == pytest.approx(script("trace_replay").mean_availability(), abs=1e-3)
    # the trace's two sites: links between them are up only in the gateways' contacts and six
    # short random contacts, so far fewer cross-site messages arrive than under i.i.d. links
    cross = np.add.outer(np.arange(10) < 5, np.arange(10) < 5) == 1
    share = {name: res.arrays("links", "sgp", 0)["delivered"][:, cross].mean()
             for name, res in results.items()}
    assert share["trace_replay"] < 0.5 * share["trace_replay_bernoulli"]
    assert "mean link availability" in capsys.readouterr().out


def test_custom_link_model(out):
    res = script("custom_link_model").main(["--short", "--out", str(out)])
    assert res.config["network"]["links"]["name"] == "region_outage"
    delivered = res.arrays("links", "sgp", 0)["delivered"]          # [R, dst, src]
    region = np.arange(12) % 3
    for r in range(len(delivered)):             # links fail by region: a region delivers all or none
        inside = [delivered[r][np.ix_(region == k, region == k)].any() for k in range(3)]
        for k in range(3):
            if not inside[k]:
                assert not delivered[r][region == k].any() and not delivered[r][:, region == k].any()
    assert (res.dir / "figures" / "links_sgp_seed0.png").is_file()


def test_custom_algorithm(out):
    res = script("custom_algorithm").main(["--short", "--out", str(out)])
    frame = res.summary_frame
    assert list(frame.index) == ["local", "dpsgd", "gossip_ft", "diple"]
    # same gossip, same bytes; the fine-tuned copies differ from D-PSGD's models
    assert frame.loc["gossip_ft", "bytes_sent"] == frame.loc["dpsgd", "bytes_sent"]
    assert frame.loc["gossip_ft", "mean_accuracy"] != frame.loc["dpsgd", "mean_accuracy"]
    assert frame.loc["gossip_ft", "sim_time"] > frame.loc["dpsgd", "sim_time"]


def test_paper_figure(out):
    for name, folder in (("trace_replay", "trace_replay"), ("custom_link_model", "region_outages")):
        if not (out / folder / "summary.json").is_file():     # run alone (or on another worker)
            script(name).main(["--short", "--out", str(out)])
    paths = script("paper_figure").main([str(out / "trace_replay"), str(out / "region_outages"),
                                         "--out", str(out / "paper")])
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG" and paths[1].read_bytes()[:4] == b"%PDF"


def test_async_stragglers(out, capsys):
    table = script("async_stragglers").main(["--short", "--out", str(out), "--target", "0.1"])
    assert list(table.index) == ["adpsgd", "async_push", "gossip_learning", "fedbuff",
                                 "sync_sgp", "sync_dpsgd", "sync_fedavg", "sgp", "dpsgd",
                                 "fedavg"]
    assert list(table["engine"]) == (["event-driven"] * 4 + ["event-driven, rounds"] * 3
                                     + ["round-based"] * 3)
    assert (table["end"] > 0).all() and table.loc["sync_sgp", "vs_reference"] == ""
    figure = out / "async_stragglers_short" / "figures" / "stragglers_accuracy_vs_time.pdf"
    assert figure.is_file() and figure.with_suffix(".txt").is_file()
    assert "| `fedbuff` | event-driven |" in capsys.readouterr().out
