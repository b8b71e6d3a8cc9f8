"""Output for terminals and logs: progress with an honest ETA, plain lines in logs, --quiet,
--verbose, and an analyze table that fits 100 columns."""
from __future__ import annotations

import io

import yaml

from netsim.analysis import format_table
from netsim.cli import DEFAULT_SCENARIO, main
from netsim.util.progress import INTERVAL, Progress
from helpers import TINY


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_eta_charges_each_algorithm_its_own_cost():
    clock, log = Clock(), io.StringIO()
    p = Progress("x", ["fast", "slow"], [0, 1], rounds=2, stream=log, clock=clock)
    assert p.total == 8 and p.eta() is None
    for label, cost in (("fast", 1.0), ("slow", 10.0)):          # seed 0
        p.start(label, 0)
        for _ in range(2):
            clock.t += cost
            p.advance()
    assert p.eta() == 2 * 1.0 + 2 * 10.0                       # seed 1: 2 fast + 2 slow rounds
    p.start("fast", 1)
    clock.t += 1.0
    p.advance()
    assert p.eta() == 1 * 1.0 + 2 * 10.0
    p.skip()                                                   # diverged: its last round is not work
    assert p.total == 7 and p.eta() == 2 * 10.0


def test_plain_lines_in_a_log_are_periodic():
    clock, log = Clock(), io.StringIO()
    p = Progress("x", ["a"], [0], rounds=1000, stream=log, clock=clock)
    p.start("a", 0)
    for _ in range(1000):
        clock.t += 1.0                                         # 1000 s in all
        p.advance()
    p.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()
    # one line per max(INTERVAL, elapsed / 10) seconds: ~10 per tenfold of time, plus 2
    assert 10 < len(lines) < 40 and INTERVAL == 10.0
    assert lines[0] == "x: 1 algorithms x 1 seeds x 1000 rounds = 1000 rounds"
    assert "ETA" in lines[1] and lines[-1] == "x: 1000/1000 rounds in 16:40"


def test_quickstart_log_is_short(tmp_path, capsys):
    args = ["run", str(DEFAULT_SCENARIO), "--set", "schedule.rounds=4", "--set",
            "schedule.eval_every=2", "--set", "algorithms.fedavg_ft.finetune_rounds=1",
            "--set", "outputs.figures=false", "--out", str(tmp_path)]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert len((out + err).splitlines()) < 100
    assert "\r" not in err and err.startswith("quickstart: 18 algorithms x 1 seeds x 4 rounds")
    assert "algorithm" in out and "results:" in out                 # the table on stdout
    heads = ["baselines", "federated", "clustered", "decentralised", "learned graph",
             "learned weights"]
    assert [line for line in out.splitlines() if line in heads] == heads   # groups, in order
    assert "clusters P/R" in out.splitlines()[0]


def test_quiet_verbose_and_the_figures_line(tmp_path, capsys):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(yaml.safe_dump({**TINY, "outputs": {"figures": True}}))
    base = ["run", str(tiny), "--set", "algorithms=[local, sgp]", "--out"]
    assert main(base + [str(tmp_path / "q"), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(base + [str(tmp_path / "v"), "--verbose"]) == 0
    out, err = capsys.readouterr()
    assert "local seed 0: mean test" in err and "sgp seed 0: mean test" in err
    assert "writing figures to" in err and "figures written in" in err


def test_analyze_table_fits_100_columns():
    names = [f"algorithm_{k:02d}" for k in range(18)]
    analysis = {"threshold": 0.0, "algorithms": {
        n: {"seeds": [0], "mean": {"final_accuracy": 0.5, "density": 0.25}} for n in names}}
    text = format_table(analysis)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert all(n in text for n in names)
    wide = format_table(analysis, width=None)
    assert len(wide.splitlines()[0]) > 100 and wide.count("final_accuracy") == 1
