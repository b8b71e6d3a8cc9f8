"""A results folder checked before ``netsim figures`` or ``netsim analyze`` reads it: a folder
that is not netsim's, a config.yaml that is not UTF-8 YAML, a run killed before its first
results, or a table netsim did not write is one ConfigError, not a traceback from deep inside
pandas."""
from __future__ import annotations

from pathlib import Path

from netsim.errors import ConfigError
from netsim.results import METRIC_COLUMNS, NETWORK_COLUMNS
from netsim.scenario.config import read_yaml

#: the tables an analysis or a figure reads, with the header netsim writes
TABLES = {"metrics.csv": METRIC_COLUMNS, "network.csv": NETWORK_COLUMNS}


def _header(path: Path) -> str | None:
    """The first line of ``path`` (None: not UTF-8 text)."""
    try:
        with path.open(encoding="utf-8") as fh:
            return fh.readline(10_000).rstrip("\n")
    except UnicodeDecodeError:
        return None


def _readable(header: str | None, columns: tuple[str, ...]) -> bool:
    """``header`` is netsim's: today's ``columns``, or (a folder from an earlier netsim) the same
    leading key columns and a subset of today's metric columns, in today's order."""
    if header is None:
        return False
    fields = header.split(",")
    return fields == list(columns) or (fields[:4] == list(columns[:4]) and
                                       [c for c in columns if c in fields] == fields)


def check_results(path: str | Path) -> Path:
    """``path`` as a results folder whose config.yaml and tables can be read; a ConfigError on
    ``results`` naming what is wrong otherwise."""
    folder = Path(path)
    if not (folder / "config.yaml").is_file():
        raise ConfigError("results", str(path), "a netsim results folder (with config.yaml)")
    read_yaml(folder / "config.yaml", "results")
    for name, columns in TABLES.items():
        if not (folder / name).is_file():
            raise ConfigError("results", str(path), f"a results folder with {name}",
                              "no results yet: the run stopped before its first round; finish "
                              "it with the same `netsim run` command and --resume")
        header = _header(folder / name)
        if not _readable(header, columns):
            raise ConfigError("results", str(folder / name), "the table netsim writes, with "
                              f"the header {','.join(columns)}", "it is not UTF-8 text"
                              if header is None else f"its first line is {header!r}")
    return folder
