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
from typing import Literal

from netsim.errors import ConfigError
from netsim.schema import check_section
from netsim.schema.params import Params, param, schema


@dataclass(frozen=True)
class Policy(Params):
    """A receiver policy: the ``network.policy`` section (or an algorithm's ``policy``)."""

    name: Literal["wait_all", "deadline", "async"] = param("wait_all", "receiver policy")
    timeout: float | None = param(None, "wait_all: give up this long after the phase started",
                                  lo=0, lo_open=True)
    deadline: float | None = param(None, "deadline: round length in simulated seconds", lo=0,
                                   lo_open=True)
    late: Literal["drop", "stale"] = param("drop", "deadline: what happens to late messages")
    max_staleness: int = param(0, "async/stale: oldest usable copy, in rounds", lo=0)

    @property
    def keeps_late(self) -> bool:
        """Whether messages arriving after the phase end are kept as stale copies."""
        return self.name == "async" or (self.name == "deadline" and self.late == "stale")


@dataclass(frozen=True)
class Budget(Params):
    """The ``network.budget`` section: communication budgets, null = unlimited."""

    peers_per_round: int | None = param(None, "in-degree cap: messages a node accepts per round "
                                        "(DPFL Bc)", lo=0)
    bytes_per_round: float | None = param(None, "bytes a node may send per round", lo=0)
    total_bytes: float | None = param(None, "bytes a node may send over the whole run", lo=0)


def validate_policy(spec: dict | None, path: str) -> dict:
    """Fill defaults and check the combination (a deadline policy needs a deadline)."""
    out = check_section(path, spec or {}, schema(Policy))
    if out["name"] == "deadline" and out["deadline"] is None:
        raise ConfigError(f"{path}.deadline", None, "a positive number of simulated seconds",
                          "the deadline policy needs one")
    if out["late"] == "stale" and out["name"] != "deadline":
        raise ConfigError(f"{path}.late", "stale", "drop", "'stale' applies to the deadline policy")
    return out


def validate_budget(spec: dict | None, path: str) -> dict:
    """Budgets are non-negative; null means unlimited."""
    return check_section(path, spec or {}, schema(Budget))
