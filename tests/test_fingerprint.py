"""The stored fingerprint (tests/fingerprint.json): a few short scenarios give the same numbers,
bit for bit, in an environment they were stored in (requirements.lock's packages, the same
Python, torch CPU kernel level and BLAS signature, one torch thread). A deliberate numerical
change regenerates it in the same commit (``python benchmarks/results_fingerprint.py --store``)
and says which numbers moved; in another environment the numbers may differ in their last bits
and the check is skipped, saying why. An entry stored before the BLAS signature was recorded
(without ``blas``) is checked on every CPU of its other keys, and a difference from it is a skip:
two CPUs of the same kernel level were seen to round differently."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_fingerprint import compare, stored_for, suite_fingerprint  # noqa: E402


def test_the_suite_scenarios_give_the_stored_numbers_bit_for_bit():
    from netsim._version import environment

    here = environment()
    entry, stored = stored_for(here)
    if entry is None:
        pytest.skip(f"stored in other environments {stored}; here {here}")
    now = suite_fingerprint()
    diffs = compare(entry["scenarios"], now["scenarios"])
    if diffs and "blas" not in entry["environment"]:
        pytest.skip(f"{len(diffs)} numbers differ from an entry stored without a BLAS signature, "
                    "which may be this CPU's rounding; `python benchmarks/results_fingerprint.py "
                    f"--add-machine` stores this machine's (blas {here['blas']})")
    assert not diffs, ("numbers moved (a deliberate change regenerates tests/fingerprint.json with "
                       "`python benchmarks/results_fingerprint.py --store`):\n"
                       + "\n".join(diffs[:20]))


def test_the_entry_is_chosen_by_every_key_it_recorded(tmp_path, monkeypatch):
    import json

    import results_fingerprint

    env = {"netsim": "0", "python": "3", "torch": "2", "cpu_capability": "AVX512"}
    legacy = {"environment": env, "scenarios": {"a": 1}}                   # stored before "blas"
    signed = {"environment": {**env, "blas": "x"}, "scenarios": {"a": 2}}
    path = tmp_path / "fingerprint.json"
    path.write_text(json.dumps({"machines": [legacy, signed]}))
    monkeypatch.setattr(results_fingerprint, "STORED", path)
    assert stored_for({**env, "blas": "x"})[0] is not None
    assert stored_for({**env, "blas": "x"})[0]["scenarios"] == {"a": 2}       # the most keys
    assert stored_for({**env, "blas": "y", "netsim": "9"})[0]["scenarios"] == {"a": 1}
    entry, stored = stored_for({**env, "torch": "3", "blas": "x"})
    assert entry is None and len(stored) == 2


def test_the_blas_signature_is_the_machines_not_the_processes():
    """The same value in a fresh process at another thread count, which it leaves as it was."""
    import subprocess

    import torch

    from netsim._version import blas_signature

    code = ("import torch; torch.set_num_threads(2); from netsim._version import blas_signature; "
            "s = blas_signature(); assert torch.get_num_threads() == 2; print(s)")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=ROOT).stdout.strip()
    assert other == blas_signature() and len(other) == 12 and torch.get_num_threads() == 1
