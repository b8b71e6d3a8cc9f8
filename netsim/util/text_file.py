"""Reading a text file a user named (a scenario, a sweep, a link trace, a topology's edge list):
every problem is one ConfigError that says which it is."""
from __future__ import annotations

from pathlib import Path

from netsim.errors import ConfigError


def read_text(path: str | Path, field: str, what: str) -> str:
    """The UTF-8 text of ``path``, ``what`` the file should be (e.g. ``YAML file``); a ConfigError
    on ``field`` when it is missing, not a regular file (a folder, or a device such as
    /dev/zero), unreadable or not UTF-8."""
    path = Path(path)
    allowed = f"an existing {what}"
    if not path.exists():
        raise ConfigError(field, str(path), allowed, "not found")
    if not path.is_file():
        raise ConfigError(field, str(path), allowed, "not a regular file: a folder or a device")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(field, str(path), f"{allowed} in UTF-8", str(exc)) from None
    except OSError as exc:
        raise ConfigError(field, str(path), allowed,
                          f"cannot be read: {exc.strerror or type(exc).__name__}") from None
