"""The results contract (DESIGN.md): writing while the run goes, atomically, and reading back.

``OUT/<scenario>/`` holds ``config.yaml``, ``metrics.csv``, ``summary.json``, ``clients.csv``,
``network.csv``, ``collab/<alg>_seed<k>.npz``, ``links/<alg>_seed<k>.npz``, ``trace/`` (optional)
and ``figures/``. Every file is written to a temporary name and renamed, so a killed run leaves
the last complete version of each file.
"""
from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import yaml

METRIC_COLUMNS = ("algorithm", "seed", "round", "sim_time", "client", "split", "accuracy", "loss")
NETWORK_COLUMNS = ("algorithm", "seed", "round", "sim_time", "bytes_sent", "messages_sent",
                   "messages_delivered", "messages_dropped", "mean_latency", "max_staleness")
CLIENT_COLUMNS = ("client", "cluster", "n_train", "n_val", "n_test", "group")


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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

    def __init__(self, root: str | Path, config: dict):
        self.dir = Path(root) / config["name"]
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.metrics: list[tuple] = []
        self.network: list[tuple] = []
        atomic_write(self.dir / "config.yaml", yaml.safe_dump(config, sort_keys=False))

    def write_clients(self, cluster: np.ndarray, n: dict[str, np.ndarray], group: list[str]) -> None:
        rows = [(i, int(cluster[i]), int(n["train"][i]), int(n["val"][i]), int(n["test"][i]),
                 group[i]) for i in range(len(cluster))]
        atomic_write(self.dir / "clients.csv", _csv_text(CLIENT_COLUMNS, rows))

    def add_metrics(self, rows: Iterable[tuple]) -> None:
        """Append evaluation rows (METRIC_COLUMNS order) and rewrite metrics.csv."""
        self.metrics.extend(tuple(_fmt(v) for v in r) for r in rows)
        atomic_write(self.dir / "metrics.csv", _csv_text(METRIC_COLUMNS, self.metrics))

    def add_network(self, rows: Iterable[tuple]) -> None:
        """Append per-round network rows (NETWORK_COLUMNS order) and rewrite network.csv."""
        self.network.extend(tuple(_fmt(v) for v in r) for r in rows)
        atomic_write(self.dir / "network.csv", _csv_text(NETWORK_COLUMNS, self.network))

    def write_arrays(self, kind: str, algorithm: str, seed: int, **arrays: np.ndarray) -> Path:
        """Write ``<kind>/<algorithm>_seed<seed>.npz`` (kind: collab or links)."""
        path = self.dir / kind / f"{algorithm}_seed{seed}.npz"
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        atomic_write(path, buf.getvalue())
        return path

    def write_summary(self, summary: dict) -> None:
        atomic_write(self.dir / "summary.json", json.dumps(summary, indent=2, default=float))


class Results:
    """A results folder read back: config, summary, metrics and network tables, arrays."""

    def __init__(self, path: str | Path):
        self.dir = Path(path)
        if not (self.dir / "config.yaml").is_file():
            raise FileNotFoundError(f"{self.dir} is not a netsim results folder (no config.yaml)")

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
        return f"Results('{self.dir}': {len(algs)} algorithms: {', '.join(algs)})"

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
