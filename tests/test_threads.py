"""Torch threads of a run: --threads, the scenario's threads: and netsim's default, one per core
with a short OpenMP spin (netsim.util.threads)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import netsim.util.threads as nt
from netsim import Scenario, run
from netsim.errors import ConfigError

from helpers import TINY

SMALL = dict(TINY, algorithms=["local"], schedule={"rounds": 1, "eval_every": 1})


def test_default_is_one_thread_per_core_unless_omp_num_threads_says(tmp_path, monkeypatch):
    monkeypatch.setattr(nt, "DEFAULT_THREADS", None)          # the suite fixes 1 (conftest.py)
    monkeypatch.setattr(nt, "cores", lambda: 3)
    for env, want in (("4", 4), ("", 3), ("0", 3), ("x", 3)):
        monkeypatch.setenv("OMP_NUM_THREADS", env)
        assert nt.default_threads() == want
    monkeypatch.delenv("OMP_NUM_THREADS")
    try:
        run(Scenario(SMALL), out=tmp_path / "a", quiet=True)
        assert torch.get_num_threads() == 3
        assert json.loads((tmp_path / "a/tiny/summary.json").read_text())["threads"] == 3
    finally:
        torch.set_num_threads(1)


def test_import_netsim_sets_a_short_openmp_spin_before_torch_loads():
    """``import netsim``, ``netsim --help`` and argument errors load no torch (netsim.util.lazy);
    the first name that needs it loads it after netsim.util.threads."""
    code = ("import os, sys, netsim, netsim.cli\n"
            "for argv in (['--help'], ['validate', '--help'], ['run', '--bogus']):\n"
            "    try: netsim.cli.build_parser().parse_args(argv)\n"
            "    except SystemExit: pass\n"
            "assert 'torch' not in sys.modules\n"
            "netsim.Scenario; m = list(sys.modules)\n"                # modules in import order
            "assert m.index('netsim.util.threads') < m.index('torch')\n"
            "print(os.environ['GOMP_SPINCOUNT'])")
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split()[-1] == nt.SPIN_COUNT == "10000", out.stderr     # after the help


def test_results_do_not_depend_on_the_thread_count(tmp_path):
    """MLP runs give the same bytes with 1 and 2 threads (CNNs need not: netsim.util.threads)."""
    scen = dict(TINY, model={"name": "mlp", "hidden": [256]}, algorithms=["fedavg", "sgp", "cobo"],
                schedule={"rounds": 2, "eval_every": 1})
    try:
        for n in (1, 2):
            run(Scenario(scen), out=tmp_path / str(n), quiet=True, threads=n)
    finally:
        torch.set_num_threads(1)
    for name in ("metrics.csv", "network.csv"):
        assert (tmp_path / "1/tiny" / name).read_bytes() == (tmp_path / "2/tiny" / name).read_bytes()


@pytest.mark.parametrize("bad", [0, -2, 1.5, "two", True])
def test_bad_threads_are_refused(bad):
    with pytest.raises(ConfigError, match="^threads: "):
        Scenario(dict(SMALL, threads=bad)).resolve()
    with pytest.raises(ConfigError, match="^threads: "):
        nt.use_threads(bad)


def test_malloc_thresholds_are_fixed_on_glibc_unless_the_user_set_them(monkeypatch):
    """netsim.util.allocator: glibc's mmap / trim thresholds are fixed for a run (mallopt returns
    1), left alone where the user set one, and nothing is done on another C library."""
    from netsim.util import allocator
    glibc = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    assert allocator.tune_malloc() is glibc
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1048576")
    assert allocator.tune_malloc() is False
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    monkeypatch.setattr(allocator.os, "confstr", lambda name: "musl 1.2")
    assert allocator.tune_malloc() is False
