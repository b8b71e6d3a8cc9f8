"""Writing a file atomically: through a temporary file in the same folder and a rename, so a
killed writer leaves the previous version (and at most a temporary file, :data:`TEMPORARY`)."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

#: the name of a temporary file of :func:`atomic_write` (``.NAME.XXXXXXXX``, mkstemp's eight
#: random characters), what a kill mid-write leaves beside ``NAME``
TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[a-z0-9_]{8}$")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o666 & ~_umask())             # mkstemp's 0600 would hide results
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
