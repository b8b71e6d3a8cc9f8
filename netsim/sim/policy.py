"""Receiver policies and communication budgets: their schemas and validation.

A receiver policy says how long a receiver waits in an exchange phase and what it does with
messages that come late (docs/architecture.md, "The layers"):

- ``wait_all``: wait until every expected message has arrived, or ``timeout`` simulated seconds
  after the phase started (null = wait for every message that can still arrive);
- ``deadline``: the phase ends ``deadline`` seconds after the round started; late messages are
  dropped (``late: drop``) or delivered in a later round as stale copies (``late: stale``);
- ``async``: nobody waits; each receiver uses the freshest copy it has received, at most
  ``max_staleness`` rounds old.
"""
from __future__ import annotations

from dataclasses import dataclass

from netsim.errors import ConfigError
from netsim.schema import Field, check_section

POLICY_FIELDS = {
    "name": Field("str", "wait_all", "receiver policy", choices=("wait_all", "deadline", "async")),
    "timeout": Field("float", None, "wait_all: give up this long after the phase started",
                     lo=0, lo_open=True, nullable=True),
    "deadline": Field("float", None, "deadline: round length in simulated seconds",
                      lo=0, lo_open=True, nullable=True),
    "late": Field("str", "drop", "deadline: what happens to late messages", choices=("drop", "stale")),
    "max_staleness": Field("int", 0, "async/stale: oldest usable copy, in rounds", lo=0),
}

BUDGET_FIELDS = {
    "peers_per_round": Field("int", None, "in-degree cap: messages a node accepts per round (DPFL Bc)",
                             lo=0, nullable=True),
    "bytes_per_round": Field("float", None, "bytes a node may send per round", lo=0, nullable=True),
    "total_bytes": Field("float", None, "bytes a node may send over the whole run", lo=0,
                         nullable=True),
}


@dataclass(frozen=True)
class Policy:
    """A validated receiver policy."""

    name: str = "wait_all"
    timeout: float | None = None
    deadline: float | None = None
    late: str = "drop"
    max_staleness: int = 0

    @property
    def keeps_late(self) -> bool:
        """Whether messages arriving after the phase end are kept as stale copies."""
        return self.name == "async" or (self.name == "deadline" and self.late == "stale")


def validate_policy(spec: dict | None, path: str) -> dict:
    """Fill defaults and check the combination (a deadline policy needs a deadline)."""
    out = check_section(path, spec or {}, POLICY_FIELDS)
    if out["name"] == "deadline" and out["deadline"] is None:
        raise ConfigError(f"{path}.deadline", None, "a positive number of simulated seconds",
                          "the deadline policy needs one")
    if out["late"] == "stale" and out["name"] != "deadline":
        raise ConfigError(f"{path}.late", "stale", "drop", "'stale' applies to the deadline policy")
    return out


def validate_budget(spec: dict | None, path: str) -> dict:
    """Budgets are non-negative; null means unlimited."""
    return check_section(path, spec or {}, BUDGET_FIELDS)
