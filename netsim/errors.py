"""Errors raised before a run starts, each naming the field, the bad value and what is allowed."""
from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A scenario value is unknown, of the wrong type, out of range or impossible.

    The message always reads ``<field>: got <value>; allowed: <allowed>``.
    """

    def __init__(self, field: str, value: Any, allowed: str, hint: str = ""):
        self.field, self.value, self.allowed = field, value, allowed
        msg = f"{field}: got {value!r}; allowed: {allowed}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)
