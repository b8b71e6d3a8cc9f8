"""The stored fingerprint (tests/fingerprint.json): a few short scenarios give the same numbers,
bit for bit, in the environment they were stored in (requirements.lock's packages, the same
Python and torch CPU kernel level, one torch thread). A deliberate numerical change regenerates
it in the same commit (``python benchmarks/results_fingerprint.py --store``) and says which
numbers moved; in another environment the numbers may differ in their last bits and the check is
skipped, saying why."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_fingerprint import STORED, compare, suite_fingerprint  # noqa: E402


def test_the_suite_scenarios_give_the_stored_numbers_bit_for_bit():
    from netsim._version import environment

    stored = json.loads(STORED.read_text())
    here = environment()
    differ = {k: (v, here.get(k)) for k, v in stored["environment"].items()
              if k != "netsim" and here.get(k) != v}
    if differ:
        pytest.skip(f"stored in another environment (stored, here): {differ}")
    now = suite_fingerprint()
    diffs = compare(stored["scenarios"], now["scenarios"])
    assert not diffs, ("numbers moved (a deliberate change regenerates tests/fingerprint.json with "
                       "`python benchmarks/results_fingerprint.py --store`):\n"
                       + "\n".join(diffs[:20]))
