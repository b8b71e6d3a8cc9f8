"""The installed packages are requirements.lock's: the README's `pip install -r requirements.txt`
installs exactly those versions, and the suite's bit-for-bit checks (tests/test_fingerprint.py)
hold only there."""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from netsim._version import NUMERIC_PACKAGES, environment

LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"


def locked() -> dict[str, str]:
    """{package: version} of every ``name==version`` line of requirements.lock."""
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", LOCK.read_text(), flags=re.M)
    return {name.lower(): version for name, version in pins}


def _public(version: str) -> str:
    """A version without its local label: torch 2.13.0+cpu and 2.13.0+cu128 are both 2.13.0."""
    return version.split("+", 1)[0]


def test_the_lock_pins_every_package_netsim_needs():
    pins = locked()
    requires = [re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower()
                for r in metadata.requires("netsim") or []]
    assert set(requires) <= set(pins), set(requires) - set(pins)
    assert set(NUMERIC_PACKAGES) <= set(pins)
    assert not [v for v in pins.values() if "+" in v]     # any build of a release satisfies it


def test_the_installed_versions_are_the_locked_ones():
    wrong = {}
    for name, version in locked().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed is None or _public(installed) != version:
            wrong[name] = (version, installed)
    assert not wrong, f"(locked, installed): {wrong}; run `pip install -r requirements.txt`"


def test_the_environment_names_what_the_numbers_depend_on():
    env = environment()
    assert {"netsim", "python", "cpu_capability", "blas", *NUMERIC_PACKAGES} == set(env)
    assert _public(env["torch"]) == locked()["torch"]
