"""Runtime: the :class:`ClientBank` of stacked per-client parameters and mixing helpers."""
from __future__ import annotations

from netsim.runtime.bank import ClientBank
from netsim.runtime.mixing import metropolis_weights, mix, rows_normalise
from netsim.util.device import resolve_device

__all__ = ["ClientBank", "resolve_device", "mix", "rows_normalise", "metropolis_weights"]
