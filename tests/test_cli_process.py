"""The ``netsim`` command in its own process (netsim.cli.entry) and main() called from Python."""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

from netsim.cli import main

from helpers import TINY

SMALL = dict(TINY, algorithms=["local"], schedule={"rounds": 1, "eval_every": 1})


def test_own_process_freezes_its_imports_and_a_caller_keeps_its_collector(tmp_path):
    """The console script puts the objects alive after its imports out of the collector's reach
    (gc.freeze) before the rounds, and everything alive again before the exit, with the collector
    on; main() leaves its caller's collector as it was; both write the same results."""
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(json.dumps(SMALL))
    code = ("import atexit, gc, sys\n"
            "from netsim.running import runner\n"
            "loop, seen = runner.run_loop, []\n"
            "def timed(*a, **k):\n"
            "    seen.append(gc.get_freeze_count())\n"
            "    return loop(*a, **k)\n"
            "runner.run_loop = timed\n"
            "atexit.register(lambda: print('collector', *seen, gc.get_freeze_count(),\n"
            "                              gc.isenabled()))\n"
            "from netsim.cli import entry\n"
            "sys.argv = ['netsim', 'run', sys.argv[1], '--out', sys.argv[2], '-q']\n"
            "entry()")
    own = subprocess.run([sys.executable, "-c", code, str(cfg), str(tmp_path / "own")],
                         env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True,
                         text=True)
    assert own.returncode == 0, own.stderr
    word, rounds, end, enabled = own.stdout.split()[-4:]      # frozen objects when the rounds
    assert word == "collector" and enabled == "True"          # start, and before the exit
    assert 100_000 < int(rounds) < int(end)
    before = gc.get_freeze_count()
    assert main(["run", str(cfg), "--out", str(tmp_path / "caller"), "-q"]) == 0
    assert gc.get_freeze_count() == before and gc.isenabled()
    for name in ("metrics.csv", "network.csv"):
        assert ((tmp_path / "own/tiny" / name).read_bytes()
                == (tmp_path / "caller/tiny" / name).read_bytes())
