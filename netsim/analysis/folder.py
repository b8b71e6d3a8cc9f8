"""What an analysis reads from a results folder besides the tables: its (algorithm, seed) runs,
which arrays exist, each seed's ground truth (clients.csv) and the clients' data rebuilt from
config.yaml."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from netsim.results import Results


def as_results(results: Results | str | Path) -> Results:
    """``results`` itself, or the results folder at that path."""
    return results if isinstance(results, Results) else Results(results)


def has_arrays(res: Results, kind: str, algorithm: str, seed: int) -> bool:
    """Whether ``<kind>/<algorithm>_seed<seed>.npz`` exists in the folder."""
    return (res.dir / kind / f"{algorithm}_seed{seed}.npz").is_file()


def runs(res: Results) -> list[tuple[str, int]]:
    """(algorithm, seed) pairs evaluated in metrics.csv, in the order they ran."""
    m = res.metrics
    return [(str(a), int(s)) for a, s in m[["algorithm", "seed"]].drop_duplicates().itertuples(
        index=False)]


def rebuild_data(res: Results, seed: int | None = None):
    """The clients' data of run ``seed`` (default: the first) rebuilt from config.yaml, as the
    runner builds it from the config and the seed's data stream alone; None where that fails,
    e.g. a dataset folder or an extension module missing on this machine."""
    from netsim.data import build_client_data
    from netsim.errors import ConfigError
    from netsim.util.rng import Streams

    cfg = res.config
    seed = runs(res)[0][1] if seed is None else seed
    try:
        return build_client_data(cfg["data"], cfg["clients"],
                                 Streams(seed, cfg["stream_seeds"]).numpy("data"))
    except (OSError, ConfigError):
        return None


def client_rows(res: Results, seed: int | None = None) -> pd.DataFrame:
    """clients.csv's rows of run ``seed`` (default: the first seed), sorted by client. Every seed
    has its own block: a partition drawn from the seed's data stream (e.g. ``label_flip``)
    differs between seeds."""
    c = res.clients
    seed = int(c["seed"].iloc[0]) if seed is None else seed
    rows = c[c["seed"] == seed]
    if rows.empty:
        raise ValueError(f"{res.dir / 'clients.csv'} has no rows of seed {seed}")
    return rows.sort_values("client")


def client_table(res: Results, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Ground-truth ``cluster`` (int, -1 = none) and ``group`` ('' = none) of every client in
    run ``seed`` (default: the first), from that seed's rows of clients.csv."""
    c = client_rows(res, seed)
    group = c["group"].astype(object).where(c["group"].notna(), "")
    return c["cluster"].to_numpy(int), group.astype(str).to_numpy(object)
