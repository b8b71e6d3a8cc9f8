"""Which files of a results folder netsim wrote: ``FOLDER/.netsim.manifest`` lists them, one path
relative to the folder a line (POSIX, sorted), each added before the file is first written. A
rerun removes only these and the temporary files a kill left beside them (:func:`split`); any
other file in the folder is foreign: netsim never deletes or replaces it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from netsim.results.folder_lock import LOCK
from netsim.util.atomic import TEMPORARY, atomic_write

MANIFEST = ".netsim.manifest"
#: netsim's bookkeeping files at the top of a folder: never listed, never foreign
INTERNAL = (MANIFEST, LOCK)


def recorded(folder: Path) -> set[str]:
    """The paths the manifest of ``folder`` lists (none without one)."""
    try:
        text = (folder / MANIFEST).read_text(errors="replace")
    except FileNotFoundError:
        return set()
    return set(text.splitlines()) - {""}


def _save(folder: Path, names: set[str]) -> None:
    if names:
        atomic_write(folder / MANIFEST, "".join(f"{n}\n" for n in sorted(names)))
    else:
        (folder / MANIFEST).unlink(missing_ok=True)


def relative(folder: Path, path: str | Path) -> str | None:
    """``path`` relative to ``folder`` (both resolved) as POSIX text; None outside it."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(folder))
    return None if rel == os.curdir or rel.split(os.sep)[0] == os.pardir else Path(rel).as_posix()


def record(folder: Path, paths: Iterable[str | Path]) -> None:
    """Add ``paths`` (those inside ``folder``) to its manifest."""
    names = recorded(folder)
    new = {rel for p in paths if (rel := relative(folder, p)) is not None} - names
    if new:
        _save(folder, names | new)


def record_figures(paths: list[Path]) -> None:
    """Record figure files about to be drawn into ``RESULTS/figures/`` in the manifest of
    RESULTS, where it is a netsim results folder (it has a manifest): any script's figures
    there are netsim's own, removed with the run's other files."""
    folder = paths[0].parent.parent
    if paths[0].parent.name == "figures" and (folder / MANIFEST).is_file():
        record(folder, paths)


def entries(folder: Path) -> list[str]:
    """Every entry under ``folder`` but folders (files, links, ...; links are not followed) and
    its :data:`INTERNAL` files, as sorted POSIX paths relative to it."""
    out = []
    for top, dirs, files in os.walk(folder):
        base = Path(top).relative_to(folder)
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        out += [(base / name).as_posix() for name in files + links]
    return sorted(set(out) - set(INTERNAL))


def _temporary_of(rel: str) -> str | None:
    """The file whose temporary file (:data:`TEMPORARY`) ``rel`` is, or None."""
    head, _, name = rel.rpartition("/")
    m = TEMPORARY.match(name)
    return None if m is None else f"{head}/{m['name']}" if head else m["name"]


def temporary(rel: str) -> bool:
    """Whether ``rel`` is a temporary file a killed write left (:data:`TEMPORARY`)."""
    return _temporary_of(rel) is not None


def split(folder: Path) -> tuple[list[str], list[str]]:
    """(netsim's own, foreign) :func:`entries` of ``folder``: own are those its manifest lists
    and the temporary files beside them or beside its :data:`INTERNAL` files."""
    names = recorded(folder) | set(INTERNAL)
    own, foreign = [], []
    for rel in entries(folder):
        (own if rel in names or _temporary_of(rel) in names else foreign).append(rel)
    return own, foreign


def remove(folder: Path, own: list[str]) -> None:
    """Delete ``own`` (own entries of ``folder``: :func:`split`) and the folders they leave
    empty; the manifest then lists only its files that still exist (none: removed)."""
    if not own:
        return
    for rel in own:
        (folder / rel).unlink(missing_ok=True)
        for parent in list(Path(rel).parents)[:-1]:
            try:
                (folder / parent).rmdir()
            except OSError:                                  # not empty (or gone)
                break
    _save(folder, {n for n in recorded(folder) - set(own) if os.path.lexists(folder / n)})
