"""Results layer: the results contract (docs/results_format.md): writing while the run goes,
atomically, and reading back.

``OUT/<scenario>/`` holds ``config.yaml``, ``metrics.csv``, ``summary.json``, ``clients.csv``,
``network.csv``, ``collab/<alg>_seed<k>.npz``, ``links/<alg>_seed<k>.npz``, ``trace/`` (optional)
and ``figures/``. Every file is written to a temporary name and renamed, so a killed run leaves
the last complete version of each file, except the row tables metrics.csv and network.csv: they
are created that way with their header and first rows, then appended to (whole lines, flushed),
so a kill leaves at most a partial last line, and a resumed run rewrites them from its
checkpoint. Files get the user's umask permissions, and every path is checked to stay inside
the folder. A folder holds exactly one run (:func:`claim_folder`); its ``INCOMPLETE`` marker is
removed only when the run finishes. A run holds the folder's lock (netsim.results.folder_lock) from
start to end, and lists every file it writes in the folder's manifest (netsim.results.manifest): a
rerun removes only those, never a file netsim did not write.
"""
from __future__ import annotations

import csv
import io
import json
import os
import pickle
from pathlib import Path
from typing import Any, Iterable, TextIO

import numpy as np
import yaml

from netsim.errors import ConfigError, option
from netsim.results import manifest
from netsim.results.folder_lock import FolderLock
from netsim.schema import SAFE_NAME_TEXT, is_safe_name
from netsim.sim.accounting import METRIC_NAMES
from netsim.sim.links_log import links_delivered
from netsim.util.atomic import atomic_write

METRIC_COLUMNS = ("algorithm", "seed", "round", "sim_time", "client", "split", "accuracy", "loss")
#: the run and the round, then a column per network metric
#: (netsim.sim.accounting: declared there, counted by the engine)
NETWORK_COLUMNS = ("algorithm", "seed", "round", "sim_time", *METRIC_NAMES)
CLIENT_COLUMNS = ("seed", "client", "cluster", "n_train", "n_val", "n_test", "group")
#: marker file of a run that has not finished (interrupted, or still running)
INCOMPLETE = "INCOMPLETE"
#: the checkpoint of an unfinished run (netsim.running.checkpoint)
CHECKPOINT = "checkpoint.pkl"
#: names netsim writes at the top of a results folder (files, or folders of its files: arrays,
#: figures, GraphML, the sweep's DONE and error.txt): a file there that netsim did not write is
#: in its way, and a run refuses the folder
OWN_NAMES = ("config.yaml", INCOMPLETE, "metrics.csv", "network.csv", "clients.csv",
             "summary.json", CHECKPOINT, "analysis.json", "analysis.csv", "DONE", "error.txt",
             "collab", "links", "accounting", "outer", "graph", "effective", "trace", "figures",
             "graphs", "staleness", "idle")
#: what ``netsim analyze`` and ``netsim figures`` derive from a run's results: removed when an
#: unfinished run resumes
DERIVED = ("analysis.json", "analysis.csv", "graphs", "figures")
#: keys of a resolved config that do not change a run's results
NOT_IDENTITY = ("outputs", "threads")


def make_folder(path: str | Path, field: str) -> Path:
    """Create ``path`` (and parents); a folder that cannot be created is a ConfigError on ``field``."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(field, str(path), "a folder that can be created and written",
                          exc.strerror or type(exc).__name__) from None
    if not os.access(path, os.W_OK):
        raise ConfigError(field, str(path), "a folder that can be created and written",
                          "not writable")
    return path


def open_folder(folder: Path, field: str) -> Path:
    """Create ``folder`` (and parents) for netsim to write in: refused (ConfigError on
    ``field``) where it is a symlink (a write outside the output folder) or a file."""
    make_folder(folder.parent, "--out")
    if folder.is_symlink():
        raise ConfigError(field, str(folder), "a folder inside the output folder",
                          "it is a symlink; netsim does not write through it")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(field, str(folder), "a folder", "it is a file")
    return make_folder(folder, "--out")


def _identity(config: dict, seeds: list[int] | None) -> tuple[dict, list[int] | None]:
    body = {k: v for k, v in config.items() if k not in NOT_IDENTITY}
    return yaml.safe_load(yaml.safe_dump(body)), seeds


def _previous_run(folder: Path) -> tuple[dict, list[int] | None] | None:
    """(config, seeds) of the run in ``folder``, seeds from its INCOMPLETE marker or summary;
    None when its config.yaml is missing or unreadable."""
    try:
        config = yaml.safe_load((folder / "config.yaml").read_text()) or {}
        if (folder / INCOMPLETE).is_file():
            seeds = (yaml.safe_load((folder / INCOMPLETE).read_text()) or {}).get("seeds")
        else:
            try:
                seeds = json.loads((folder / "summary.json").read_text()).get("seeds")
            except (OSError, ValueError):
                seeds = None
        return _identity(config, seeds)
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        return None


def _resumable(folder: Path, config: dict, seeds: list[int]) -> dict | None:
    """The checkpoint of ``folder`` when it holds an unfinished run of this same config and
    seeds; None when there is nothing to resume (no folder, no checkpoint: the run starts
    afresh); ConfigError when the folder holds another run."""
    if not (folder / "config.yaml").is_file():
        return None
    if _previous_run(folder) != _identity(config, seeds):
        raise ConfigError("--resume", str(folder), "a results folder of this same run (config "
                          "and seeds)", "it holds another run's results")
    if not (folder / CHECKPOINT).is_file():
        return None
    with (folder / CHECKPOINT).open("rb") as fh:      # written by netsim.running.checkpoint
        return pickle.load(fh)


def finished_run(folder: Path, config: dict, seeds: list[int]) -> bool:
    """``folder`` holds this same run (config and seeds), finished: nothing left to resume."""
    folder = Path(folder)
    return ((folder / "config.yaml").is_file() and (folder / "summary.json").is_file()
            and not (folder / INCOMPLETE).exists()
            and _previous_run(folder) == _identity(config, seeds))


def _not_own(folder: Path, rel: str) -> ConfigError:
    """The refusal of ``rel``, a file netsim did not write where netsim writes: never replaced."""
    return ConfigError("results folder", str(folder), "a folder whose files under netsim's "
                       "names are netsim's own", f"netsim did not write {rel} (not in "
                       f"{manifest.MANIFEST}): move or remove it yourself, or choose another "
                       "output folder or name")


def own_entries(folder: Path) -> list[str]:
    """netsim's own entries of the results folder ``folder`` (netsim.results.manifest.split);
    refused (ConfigError) where it holds only files netsim did not write, or one of them where
    netsim writes (:data:`OWN_NAMES`): netsim never deletes or replaces such a file."""
    own, foreign = manifest.split(folder)
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    if foreign and not own:
        raise ConfigError("results folder", str(folder), "an empty folder or a netsim results "
                          "folder", f"it holds {foreign[0]}{more}, which netsim did not write (no "
                          f"{manifest.MANIFEST} lists them): remove them yourself, or choose "
                          "another output folder or name")
    in_way = [rel for rel in foreign if rel.split("/")[0] in OWN_NAMES]
    if in_way:
        raise _not_own(folder, in_way[0])
    return own


def claim_folder(folder: Path, config: dict, seeds: list[int], overwrite: bool,
                 own: list[str]) -> None:
    """Clear netsim's own entries ``own`` of ``folder`` (:func:`own_entries`) for this run.

    The entries of a run of the same config (up to :data:`NOT_IDENTITY`) and seeds, or of a run
    that stopped before any result (at most its config.yaml, its INCOMPLETE marker and the
    temporary files of writes a kill interrupted), are removed: the run starts afresh and gives
    the same numbers. Another run's are refused unless ``overwrite`` (then removed). Files
    netsim did not write are kept.
    """
    nothing = {rel for rel in own if not manifest.temporary(rel)} <= {"config.yaml", INCOMPLETE}
    if not (overwrite or nothing) and _previous_run(folder) != _identity(config, seeds):
        raise ConfigError("results folder", str(folder), "an empty folder or one holding this "
                          "same run (config and seeds)", "it holds another run's results: add "
                          f"{option('overwrite')} to replace them (netsim's own files only), or "
                          "choose another output folder or name")
    manifest.remove(folder, own)


def _csv_lines(rows: Iterable[Iterable[Any]]) -> str:
    """``rows`` as CSV lines, each ending in a newline."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _csv_text(columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    """A whole CSV file: the header ``columns``, then ``rows``."""
    return _csv_lines([columns]) + _csv_lines(rows)


def _fmt(v: Any) -> Any:
    if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return v


def write_own(folder: Path, name: str, data: bytes | str) -> Path:
    """Write ``folder/name`` atomically as one of netsim's files (in the folder's manifest)."""
    path = folder / name
    manifest.record(folder, [path])
    atomic_write(path, data)
    return path


class ResultsWriter:
    """Accumulates a run's results and writes each file as it grows: atomically, or for the row
    tables (metrics.csv, network.csv) by appending whole lines. Holds the folder's lock
    (netsim.results.folder_lock) until :meth:`close` (a ``with`` block)."""

    def __init__(self, root: str | Path, config: dict, seeds: list[int] | None = None,
                 overwrite: bool = False, resume: bool = False):
        seeds = [config.get("seed", 0)] if seeds is None else seeds
        if not is_safe_name(config["name"]):
            raise ConfigError("name", config["name"], SAFE_NAME_TEXT)
        self.dir = Path(root) / config["name"]
        self._checked: dict[tuple[str, ...], Path] = {}     # names path() has checked
        self._appending: dict[str, TextIO] = {}             # row tables open for appending
        self.lock = FolderLock(open_folder(self.dir, "results folder"))
        try:
            self._start(config, seeds, overwrite, resume)
        except BaseException:
            self.close()
            raise

    def _start(self, config: dict, seeds: list[int], overwrite: bool, resume: bool) -> None:
        """Claim the folder (or resume the run in it), then write INCOMPLETE and config.yaml."""
        own = own_entries(self.dir)
        #: the checkpoint this run resumes from (``resume`` and one for this same run), or None
        self.resumed = _resumable(self.dir, config, seeds) if resume else None
        if self.resumed is None:
            claim_folder(self.dir, config, seeds, overwrite, own)
        else:   # a stale analysis or figure, or a killed write's temporary file, must not stay
            manifest.remove(self.dir, [rel for rel in own if rel.split("/")[0] in DERIVED
                                       or manifest.temporary(rel)])
        self.own = manifest.recorded(self.dir)        # the names path() need not record again
        self.config = config
        self.metrics: list[tuple] = list(self.resumed["metrics"]) if self.resumed else []
        self.network: list[tuple] = list(self.resumed["network"]) if self.resumed else []
        self.clients: dict[int, list[tuple]] = {}       # clients.csv's rows, per seed
        self.write(INCOMPLETE, yaml.safe_dump({"seeds": list(seeds)}))
        self.write("config.yaml", yaml.safe_dump(config, sort_keys=False))
        if self.resumed:
            self._restore_tables()

    def _tables(self) -> tuple[tuple[str, tuple[str, ...], list[tuple]], ...]:
        """(file name, columns, rows so far) of each row table."""
        return (("metrics.csv", METRIC_COLUMNS, self.metrics),
                ("network.csv", NETWORK_COLUMNS, self.network))

    def _restore_tables(self) -> None:
        """Rewrite the row tables from the checkpoint's rows (atomically): the killed run may
        have appended rows after its checkpoint, or half a line; a table without rows yet is
        removed (it is created with its first rows)."""
        for name, columns, rows in self._tables():
            if rows:
                self.write(name, _csv_text(columns, rows))
            else:
                self.path(name).unlink(missing_ok=True)

    def close(self) -> None:
        """Close the row tables and release the folder's lock."""
        try:
            for name in list(self._appending):
                self._appending.pop(name).close()
        finally:
            self.lock.release()

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def path(self, *parts: str) -> Path:
        """``DIR/parts...``, refused (ValueError) unless it resolves inside the results folder,
        and (ConfigError) where a file netsim did not write is there; recorded in the folder's
        manifest (checked once per name: the tables are appended to every round)."""
        if parts not in self._checked:
            path = self.dir.joinpath(*parts)
            if self.dir.resolve() not in path.resolve().parents:
                raise ValueError(f"{path} resolves outside the results folder {self.dir}")
            rel = "/".join(parts)
            if rel not in self.own:
                if os.path.lexists(path):
                    raise _not_own(self.dir, rel)
                manifest.record(self.dir, [path])
                self.own.add(rel)
            self._checked[parts] = path
        return self._checked[parts]

    def write(self, name: str, data: bytes | str) -> Path:
        """Write ``name`` (a path relative to the results folder) atomically; return its path."""
        path = self.path(*Path(name).parts)
        if name in self._appending:                 # the table is replaced: append to the new
            self._appending.pop(name).close()
        atomic_write(path, data)
        return path

    def finish(self) -> None:
        """Mark the run finished: remove the INCOMPLETE marker."""
        self.path(INCOMPLETE).unlink(missing_ok=True)

    def write_clients(self, seed: int, cluster: np.ndarray, n: dict[str, np.ndarray],
                      group: list[str]) -> None:
        """Set seed ``seed``'s rows of clients.csv (one per client) and rewrite it: a block
        per seed, in the order the seeds' data were built."""
        self.clients[seed] = [(seed, i, int(cluster[i]), int(n["train"][i]), int(n["val"][i]),
                               int(n["test"][i]), group[i]) for i in range(len(cluster))]
        rows = [r for block in self.clients.values() for r in block]
        self.write("clients.csv", _csv_text(CLIENT_COLUMNS, rows))

    def _add_rows(self, name: str, columns: tuple[str, ...], rows: list[tuple],
                  new: Iterable[tuple]) -> None:
        """Format ``new`` rows, add them to ``rows`` and to the table ``name``: the file is
        created atomically (header and rows) at its first rows, then appended to."""
        new = [tuple(_fmt(v) for v in r) for r in new]
        if rows:
            fh = self._appending.get(name)
            if fh is None:      # kept open: opening and closing cost more than a round's rows
                fh = self._appending[name] = self.path(name).open("a")
            fh.write(_csv_lines(new))
            fh.flush()          # whole lines, in the file before the next round
        else:
            self.write(name, _csv_text(columns, new))
        rows.extend(new)

    def add_metrics(self, rows: Iterable[tuple]) -> None:
        """Append evaluation rows (METRIC_COLUMNS order) to metrics.csv."""
        self._add_rows("metrics.csv", METRIC_COLUMNS, self.metrics, rows)

    def add_network(self, rows: Iterable[tuple]) -> None:
        """Append per-round network rows (NETWORK_COLUMNS order) to network.csv."""
        self._add_rows("network.csv", NETWORK_COLUMNS, self.network, rows)

    def write_arrays(self, kind: str, algorithm: str, seed: int, **arrays: np.ndarray) -> Path:
        """Write ``<kind>/<algorithm>_seed<seed>.npz`` (kind: collab or links)."""
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        return self.write(f"{kind}/{algorithm}_seed{seed}.npz", buf.getvalue())

    def write_summary(self, summary: dict) -> None:
        self.write("summary.json", json.dumps(summary, indent=2, default=float))


class Results:
    """A results folder read back: config, summary, metrics and network tables, arrays."""

    def __init__(self, path: str | Path):
        self.dir = Path(path)
        if not (self.dir / "config.yaml").is_file():
            raise FileNotFoundError(f"{self.dir} is not a netsim results folder (no config.yaml)")

    @property
    def incomplete(self) -> bool:
        """True while the run has not finished (interrupted, or still running)."""
        return (self.dir / INCOMPLETE).is_file()

    @property
    def config(self) -> dict:
        return yaml.safe_load((self.dir / "config.yaml").read_text())

    @property
    def summary(self) -> dict:
        return json.loads((self.dir / "summary.json").read_text())

    @property
    def summary_frame(self):
        """summary.json as a pandas DataFrame: one row per algorithm (index), its mean-over-seeds
        values as columns, ``diverged`` = number of diverged seeds."""
        import pandas as pd
        rows = {alg: {**{k: v for k, v in s.items() if k not in ("per_seed", "seeds", "diverged")},
                      "seeds": len(s["seeds"]), "diverged": len(s.get("diverged", []))}
                for alg, s in self.summary["algorithms"].items()}
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("algorithm")

    def __repr__(self) -> str:
        algs = list(self.summary["algorithms"]) if (self.dir / "summary.json").is_file() else []
        state = ", incomplete" if self.incomplete else ""
        return f"Results('{self.dir}': {len(algs)} algorithms: {', '.join(algs)}{state})"

    def table(self, name: str):
        """A CSV of the folder (``metrics``, ``network``, ``clients``) as a pandas DataFrame."""
        import pandas as pd
        return pd.read_csv(self.dir / f"{name}.csv")

    @property
    def metrics(self):
        return self.table("metrics")

    @property
    def network(self):
        return self.table("network")

    @property
    def clients(self):
        return self.table("clients")

    def arrays(self, kind: str, algorithm: str, seed: int) -> dict[str, np.ndarray]:
        """Arrays of ``collab`` or ``links`` for one algorithm and seed; ``links`` stored as edge
        lists (above ``netsim.sim.links_log.LINKS_DENSE_MAX`` clients) get their dense
        ``delivered`` too."""
        with np.load(self.dir / kind / f"{algorithm}_seed{seed}.npz") as z:
            arrays = {k: z[k] for k in z.files}
        if kind == "links":
            arrays["delivered"] = links_delivered(arrays)
        return arrays
