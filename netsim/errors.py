"""Errors raised before a run starts, each naming the field, the bad value and what is allowed,
and how they name an option: as the caller gives it (:func:`option`). Every message is one line
of at most :data:`MAX_LINE` characters, quoting at most :data:`MAX_VALUE` of the value."""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

#: the longest error or warning line netsim prints (:func:`one_line`)
MAX_LINE = 500
#: the longest value an error quotes (:func:`short_repr`)
MAX_VALUE = 150

_COMMAND_LINE: ContextVar[bool] = ContextVar("netsim_command_line", default=False)


@contextmanager
def command_line() -> Iterator[None]:
    """Within this block, messages name options as command-line flags (``netsim.cli``)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def option(name: str) -> str:
    """The switch ``name`` (a keyword of ``netsim.run``) as its caller gives it: ``--name`` on
    the command line (:func:`command_line`), else ``name=True``."""
    return f"--{name}" if _COMMAND_LINE.get() else f"{name}=True"


class ConfigError(ValueError):
    """A scenario value is unknown, of the wrong type, out of range or impossible.

    The message always reads ``<field>: got <value>; allowed: <allowed>``.
    """

    def __init__(self, field: str, value: Any, allowed: str, hint: str = ""):
        self.field, self.value, self.allowed = field, value, allowed
        msg = f"{field}: got {short_repr(value)}; allowed: {allowed}"
        if hint:
            msg += f" ({hint})"
        super().__init__(one_line(msg))


class _Full(Exception):
    """:func:`short_repr` has written enough."""


def short_repr(value: Any, limit: int = MAX_VALUE) -> str:
    """``repr(value)`` cut to ``limit`` characters (ending in ``...``), built only that far: a
    huge or deeply nested value (e.g. a YAML alias bomb) is never expanded."""
    parts: list[str] = []
    size = 0

    def put(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)
        if size > limit:
            raise _Full

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            put("{")
            for k, (key, item) in enumerate(v.items()):
                put(", " if k else "")
                walk(key)
                put(": ")
                walk(item)
            put("}")
        elif isinstance(v, (list, tuple)):
            put("[" if isinstance(v, list) else "(")
            for k, item in enumerate(v):
                put(", " if k else "")
                walk(item)
            put("]" if isinstance(v, list) else ",)" if len(v) == 1 else ")")
        else:
            put(repr(v[:limit + 1] if isinstance(v, str) else v))
    try:
        walk(value)
    except _Full:
        pass
    text = "".join(parts)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """``text`` as one line (line breaks become spaces) of at most ``limit`` characters."""
    text = " ".join(str(text).split("\n"))
    return text if len(text) <= limit else text[:limit - 3] + "..."
