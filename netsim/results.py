"""The results contract (DESIGN.md): writing while the run goes, atomically, and reading back.

``OUT/<scenario>/`` holds ``config.yaml``, ``metrics.csv``, ``summary.json``, ``clients.csv``,
``network.csv``, ``collab/<alg>_seed<k>.npz``, ``links/<alg>_seed<k>.npz``, ``trace/`` (optional)
and ``figures/``. Every file is written to a temporary name and renamed, so a killed run leaves
the last complete version of each file; files get the user's umask permissions, and every path is
checked to stay inside the folder. A folder holds exactly one run (:func:`claim_folder`); its
``INCOMPLETE`` marker is removed only when the run finishes.
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import yaml

from netsim.errors import ConfigError
from netsim.schema import SAFE_NAME_TEXT, is_safe_name

METRIC_COLUMNS = ("algorithm", "seed", "round", "sim_time", "client", "split", "accuracy", "loss")
NETWORK_COLUMNS = ("algorithm", "seed", "round", "sim_time", "bytes_sent", "messages_sent",
                   "messages_delivered", "messages_dropped", "mean_latency", "max_staleness")
CLIENT_COLUMNS = ("seed", "client", "cluster", "n_train", "n_val", "n_test", "group")
#: marker file of a run that has not finished (interrupted, or still running)
INCOMPLETE = "INCOMPLETE"
#: keys of a resolved config that do not change a run's results
NOT_IDENTITY = ("outputs", "threads")


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


def _identity(config: dict, seeds: list[int] | None) -> tuple[dict, list[int] | None]:
    body = {k: v for k, v in config.items() if k not in NOT_IDENTITY}
    return yaml.safe_load(yaml.safe_dump(body)), seeds


def _previous_run(folder: Path) -> tuple[dict, list[int] | None]:
    """(config, seeds) of the run in ``folder``; seeds from its INCOMPLETE marker or summary."""
    config = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    if (folder / INCOMPLETE).is_file():
        seeds = (yaml.safe_load((folder / INCOMPLETE).read_text()) or {}).get("seeds")
    else:
        try:
            seeds = json.loads((folder / "summary.json").read_text()).get("seeds")
        except (OSError, ValueError):
            seeds = None
    return _identity(config, seeds)


def _resumable(folder: Path, config: dict, seeds: list[int]) -> dict | None:
    """The checkpoint of ``folder`` when it holds an unfinished run of this same config and
    seeds; None when there is nothing to resume (no folder, no checkpoint: the run starts
    afresh); ConfigError when the folder holds another run."""
    from netsim.checkpoint import load

    if not (folder / "config.yaml").is_file():
        return None
    if _previous_run(folder) != _identity(config, seeds):
        raise ConfigError("--resume", str(folder), "a results folder of this same run (config "
                          "and seeds)", "it holds another run's results")
    return load(folder)


def finished_run(folder: Path, config: dict, seeds: list[int]) -> bool:
    """``folder`` holds this same run (config and seeds), finished: nothing left to resume."""
    folder = Path(folder)
    return ((folder / "config.yaml").is_file() and (folder / "summary.json").is_file()
            and not (folder / INCOMPLETE).exists()
            and _previous_run(folder) == _identity(config, seeds))


def claim_folder(folder: Path, config: dict, seeds: list[int], overwrite: bool) -> None:
    """Make ``folder`` an empty folder for this run.

    An empty or new folder is used as it is. A results folder of the same run (same config up
    to :data:`NOT_IDENTITY`, same seeds), or of a run that stopped before any result, is
    cleared: the run starts afresh and gives the same numbers. Any other results folder is
    refused unless ``overwrite`` (then cleared); a non-empty folder without ``config.yaml`` is
    never cleared.
    """
    make_folder(folder.parent, "--out")
    if folder.exists() and not folder.is_dir():
        raise ConfigError("results folder", str(folder), "a folder", "it is a file")
    if not folder.exists() or not any(folder.iterdir()):
        make_folder(folder, "--out")
        return
    if not (folder / "config.yaml").is_file():
        raise ConfigError("results folder", str(folder), "an empty folder or a netsim results "
                          "folder", "it holds other files; choose another --out or name")
    nothing = {p.name for p in folder.iterdir()} <= {"config.yaml", INCOMPLETE}
    if not (overwrite or nothing) and _previous_run(folder) != _identity(config, seeds):
        raise ConfigError("results folder", str(folder), "an empty folder or one holding this "
                          "same run (config and seeds)", "it holds another run's results: add "
                          "--overwrite to replace them, or choose another --out or name")
    shutil.rmtree(folder)
    make_folder(folder, "--out")


def _csv_text(columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    w.writerows(rows)
    return buf.getvalue()


def _fmt(v: Any) -> Any:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return v


class ResultsWriter:
    """Accumulates a run's results and rewrites each file atomically as it grows."""

    def __init__(self, root: str | Path, config: dict, seeds: list[int] | None = None,
                 overwrite: bool = False, resume: bool = False):
        seeds = [config.get("seed", 0)] if seeds is None else seeds
        if not is_safe_name(config["name"]):
            raise ConfigError("name", config["name"], SAFE_NAME_TEXT)
        self.dir = Path(root) / config["name"]
        #: the checkpoint this run resumes from (``resume`` and one for this same run), or None
        self.resumed = _resumable(self.dir, config, seeds) if resume else None
        if self.resumed is None:
            claim_folder(self.dir, config, seeds, overwrite)
        self.config = config
        self.metrics: list[tuple] = list(self.resumed["metrics"]) if self.resumed else []
        self.network: list[tuple] = list(self.resumed["network"]) if self.resumed else []
        self.clients: dict[int, list[tuple]] = {}       # clients.csv's rows, per seed
        self.write(INCOMPLETE, yaml.safe_dump({"seeds": list(seeds)}))
        self.write("config.yaml", yaml.safe_dump(config, sort_keys=False))

    def path(self, *parts: str) -> Path:
        """``DIR/parts...``, refused (ValueError) unless it resolves inside the results folder."""
        path = self.dir.joinpath(*parts)
        root = self.dir.resolve()
        if root not in path.resolve().parents:
            raise ValueError(f"{path} resolves outside the results folder {self.dir}")
        return path

    def write(self, name: str, data: bytes | str) -> Path:
        """Write ``name`` (a path relative to the results folder) atomically; return its path."""
        path = self.path(*Path(name).parts)
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

    def add_metrics(self, rows: Iterable[tuple]) -> None:
        """Append evaluation rows (METRIC_COLUMNS order) and rewrite metrics.csv."""
        self.metrics.extend(tuple(_fmt(v) for v in r) for r in rows)
        self.write("metrics.csv", _csv_text(METRIC_COLUMNS, self.metrics))

    def add_network(self, rows: Iterable[tuple]) -> None:
        """Append per-round network rows (NETWORK_COLUMNS order) and rewrite network.csv."""
        self.network.extend(tuple(_fmt(v) for v in r) for r in rows)
        self.write("network.csv", _csv_text(NETWORK_COLUMNS, self.network))

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
        """Arrays of ``collab`` or ``links`` for one algorithm and seed."""
        with np.load(self.dir / kind / f"{algorithm}_seed{seed}.npz") as z:
            return {k: z[k] for k in z.files}
