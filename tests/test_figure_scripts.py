"""The paper-figure scripts in figures/ run on small results folders of their algorithms and
write PNG and PDF files (their figure functions are tested for content in test_figures.py)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from netsim import Scenario, run
from helpers import DIGITS, PDBO

ROOT = Path(__file__).resolve().parent.parent


def _script(name: str, *args) -> set[str]:
    out = subprocess.run([sys.executable, str(ROOT / "figures" / name), *map(str, args)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    paths = [Path(line) for line in out.stdout.split()]
    assert paths and all(p.is_file() and p.stat().st_size > 1000 for p in paths)
    return {p.name for p in paths}


@pytest.fixture(scope="module")
def cobo_folder(tmp_path_factory):
    sc = Scenario(DIGITS).with_overrides({
        "algorithms": ["local", "oracle", "ifca", {"name": "cobo", "sampling": "all"}]})
    return run(sc, seeds=[0, 1], out=tmp_path_factory.mktemp("cobo"), quiet=True).dir


def test_cobo_scripts(cobo_folder, tmp_path):
    names = _script("cobo_figures.py", cobo_folder, "--rounds", 4, 12, "--out", tmp_path)
    assert {"cobo_collaboration.png", "cobo_collaboration.pdf", "cobo_accuracy.png",
            "cobo_domain_weights_cobo.png"} <= names
    assert "cobo_fig3_collaboration.png" in _script("cobo_fig3.py", cobo_folder, "--out", tmp_path)


def test_pdbo_script(tmp_path):
    sc = Scenario(PDBO).with_overrides({
        "schedule.rounds": 2,
        "algorithms": [{"name": "pdbo_mtl", "label": "sgp", "hypergradient": "none",
                        "learners": 2, "inner_steps": 10, "decay_last": [4, 2]},
                       {"name": "pdbo_mtl", "learners": 2, "inner_steps": 10, "decay_last": [4, 2],
                        "neumann_steps": 3}]})
    folder = run(sc, seeds=[0, 1], out=tmp_path, quiet=True).dir
    names = _script("pdbo_figures.py", folder)
    assert names == {f"{stem}.{ext}" for ext in ("png", "pdf")
                     for stem in ("pdbo_outer_weights_pdbo_mtl", "pdbo_accuracy_mean",
                                  "pdbo_accuracy_bottom10")}   # sgp keeps uniform weights
