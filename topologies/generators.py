"""Topology generators and their registry, :data:`TOPOLOGIES` (``topologies.TOPOLOGIES``).

Each ``fn(n, rng, **params)`` returns an ``nx.DiGraph`` on nodes ``0..n-1`` without self loops;
undirected families return ``nx.DiGraph(G)`` (both directions). Randomised networkx generators
get ``seed=`` drawn from ``rng``. Parameters that are impossible for ``n`` raise
:class:`ConfigError` naming ``network.topology.<field>``; the same checks are exposed per name in
:data:`CHECKS` for :func:`topologies.validate_topology`.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np

from netsim.errors import ConfigError
from netsim.schema import Field
from netsim.schema.registry import Registry
from netsim.util.text_file import read_text

if TYPE_CHECKING:                    # networkx is imported where a graph is built (0.1 s)
    import networkx as nx

TOPOLOGIES = Registry("topology")
PATH = "network.topology"
EDGE_LIST_SUFFIXES = (".txt", ".csv", ".edges")
CHECKS: dict[str, Callable[..., None]] = {}


def _topology(name: str, fields: Mapping[str, Field] | None = None,
              check: Callable[..., None] | None = None) -> Callable:
    """Register ``fn`` under ``name``; ``check(n, path, params)`` runs before it builds."""
    def deco(fn: Callable[..., nx.DiGraph]) -> Callable[..., nx.DiGraph]:
        @functools.wraps(fn)
        def build(n: int, rng: np.random.Generator, **params) -> nx.DiGraph:
            import networkx as nx

            if check is not None:
                check(n, PATH, params)
            graph = fn(n, rng, **params)
            graph.remove_edges_from(list(nx.selfloop_edges(graph)))
            return graph
        if check is not None:
            CHECKS[name] = check
        return TOPOLOGIES.register(name, fields)(build)
    return deco


def _seed(rng: np.random.Generator) -> int:
    """A networkx seed drawn from ``rng``."""
    return int(rng.integers(2**31))


def _from_edges(n: int, src: np.ndarray, dst: np.ndarray, undirected: bool) -> nx.DiGraph:
    """DiGraph on 0..n-1 with edges src->dst (and dst->src if ``undirected``)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(zip(src.tolist(), dst.tolist()))
    if undirected:
        graph.add_edges_from(zip(dst.tolist(), src.tolist()))
    return graph


def _need(ok: bool, path: str, key: str, value: object, allowed: str) -> None:
    """Raise ConfigError for ``path.key`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{path}.{key}", value, allowed)


# --------------------------------------------------------------------------- deterministic

@_topology("complete")
def complete(n: int, rng: np.random.Generator) -> nx.DiGraph:
    """Complete graph: every ordered pair i != j is an edge (n(n-1) edges)."""
    import networkx as nx

    return nx.complete_graph(n, create_using=nx.DiGraph)


@_topology("ring", {"directed": Field("bool", False, "one direction only (i -> i+1) if true")})
def ring(n: int, rng: np.random.Generator, directed: bool = False) -> nx.DiGraph:
    """Cycle i -> i+1 mod n, both directions unless ``directed``."""
    src = np.arange(n)
    return _from_edges(n, src, (src + 1) % n, undirected=not directed)


_ROWS = {"rows": Field("int", None, "number of rows; null = the near-square factorisation of n",
                       lo=1, nullable=True)}


def _check_rows(n: int, path: str, params: dict) -> None:
    rows = params.get("rows")
    _need(rows is None or n % rows == 0, path, "rows", rows, f"a divisor of n = {n}")


def _rows(n: int, rows: int | None) -> int:
    """``rows`` or the largest divisor of n not above sqrt(n)."""
    if rows is not None:
        return rows
    return max(d for d in range(1, math.isqrt(max(n, 1)) + 1) if n % d == 0)


def _lattice(n: int, rows: int | None, wrap: bool) -> nx.DiGraph:
    """rows x cols grid (node r*cols + c) with right/down neighbours, wrapping if ``wrap``."""
    r = _rows(n, rows)
    c = n // r
    rr, cc = np.divmod(np.arange(n), c)
    right = (cc + 1 < c) | wrap
    down = (rr + 1 < r) | wrap
    src = np.concatenate([np.arange(n)[right], np.arange(n)[down]])
    dst = np.concatenate([(rr * c + (cc + 1) % c)[right], (((rr + 1) % r) * c + cc)[down]])
    return _from_edges(n, src, dst, undirected=True)


@_topology("torus", _ROWS, _check_rows)
def torus(n: int, rng: np.random.Generator, rows: int | None = None) -> nx.DiGraph:
    """2-D grid with wrap-around (degree 4 when both sides are >= 3), undirected."""
    return _lattice(n, rows, wrap=True)


@_topology("grid", _ROWS, _check_rows)
def grid(n: int, rng: np.random.Generator, rows: int | None = None) -> nx.DiGraph:
    """2-D grid without wrap-around, undirected."""
    return _lattice(n, rows, wrap=False)


def exponential_peer(n: int, step: int) -> np.ndarray:
    """Single out-peer of every node at ``step`` in one-peer exponential graphs (SGP, Assran 2019).

    Node i sends to (i + 2^(step mod m)) mod n, where m = floor(log2(n-1)) + 1 is the number of
    exponents of the exponential graph (m = log2 n when n is a power of two).
    """
    if n < 2:
        raise ValueError(f"exponential_peer needs n >= 2, got {n}")
    m = (n - 1).bit_length()
    return (np.arange(n) + 2 ** (step % m)) % n


@_topology("exponential", {"one_peer": Field(
    "bool", False, "the graph keeps all 2^k edges; SGP-style algorithms then use one peer per "
                   "step, rotating with topologies.exponential_peer(n, step)")})
def exponential(n: int, rng: np.random.Generator, one_peer: bool = False) -> nx.DiGraph:
    """Directed exponential graph: i -> (i + 2^k) mod n for all 2^k <= n-1.

    Out-degree floor(log2(n-1)) + 1 (log2 n for powers of two), as in SGP (Assran et al. 2019).
    """
    hops = 2 ** np.arange((n - 1).bit_length()) if n > 1 else np.zeros(0, int)
    src = np.repeat(np.arange(n), hops.size)
    return _from_edges(n, src, (src + np.tile(hops, n)) % n, undirected=False)


@_topology("star")
def star(n: int, rng: np.random.Generator) -> nx.DiGraph:
    """Star with the hub (server) at node n-1, edges in both directions."""
    leaves = np.arange(n - 1)
    return _from_edges(n, leaves, np.full(n - 1, n - 1), undirected=True)


# --------------------------------------------------------------------------- random

_P = Field("float", 0.2, "edge probability", lo=0.0, hi=1.0)


#: Random numbers drawn per block of rows by the O(n^2) generators (memory O(n), not O(n^2)).
BLOCK = 1 << 22


def _row_blocks(n: int, width: int):
    """(first row, number of rows) of blocks of about :data:`BLOCK` values of ``n`` rows."""
    rows = max(1, BLOCK // max(width, 1))
    return ((start, min(rows, n - start)) for start in range(0, n, rows))


def _python_random(seed: int) -> np.random.RandomState:
    """numpy's MT19937 in the state of Python's ``random.Random(seed)``: its ``random_sample``
    gives the numbers ``random.random()`` gives (both are genrand_res53), vectorised."""
    import random

    state = random.Random(seed).getstate()[1]
    mt = np.random.RandomState()
    mt.set_state(("MT19937", np.asarray(state[:-1], np.uint32), state[-1]))
    return mt


@_topology("erdos_renyi", {"p": _P})
def erdos_renyi(n: int, rng: np.random.Generator, p: float = 0.2) -> nx.DiGraph:
    """Directed G(n, p): every ordered pair is an edge independently with probability p.

    Edge for edge the graph of networkx's ``gnp_random_graph(n, p, seed, directed=True)``: its
    coin flips (one ``random.random()`` per ordered pair, row by row) drawn by numpy from the
    same Mersenne Twister state, in blocks of rows (n = 10,000: 1 s instead of a minute).
    """
    import networkx as nx

    seed = _seed(rng)
    if p <= 0 or p >= 1:
        return nx.gnp_random_graph(n, p, seed=seed, directed=True)   # no draws: empty, complete
    mt, src, dst = _python_random(seed), [], []
    for start, rows in _row_blocks(n, n - 1):
        i, j = np.nonzero(mt.random_sample((rows, n - 1)) < p)
        i += start
        src.append(i)
        dst.append(j + (j >= i))                       # row i skips column i
    return _from_edges(n, np.concatenate(src), np.concatenate(dst), undirected=False)


def _check_k_out(n: int, path: str, params: dict) -> None:
    k = params.get("k", 2)
    _need(k <= n - 1, path, "k", k, f"an int in [1, n-1 = {n - 1}]")


@_topology("k_out", {"k": Field("int", 2, "out-neighbours per node", lo=1)}, _check_k_out)
def k_out(n: int, rng: np.random.Generator, k: int = 2) -> nx.DiGraph:
    """Each node picks k distinct out-neighbours uniformly among the others (directed).

    Its k smallest of one uniform key per other node, drawn row by row in blocks (O(n) memory).
    """
    dst = []
    for start, rows in _row_blocks(n, n):
        keys = rng.random((rows, n))
        keys[np.arange(rows), start + np.arange(rows)] = np.inf
        near = np.argpartition(keys, k - 1, axis=1)[:, :k]
        dst.append(np.take_along_axis(near, np.argsort(np.take_along_axis(keys, near, 1), 1), 1))
    return _from_edges(n, np.repeat(np.arange(n), k), np.concatenate(dst).ravel(),
                       undirected=False)


def _check_small_world(n: int, path: str, params: dict) -> None:
    k = params.get("k", 4)
    _need(k <= n - 1, path, "k", k, f"an int in [2, n-1 = {n - 1}]")


@_topology("small_world", {
    "k": Field("int", 4, "ring neighbours per node before rewiring (k//2 on each side)", lo=2),
    "p": Field("float", 0.1, "rewiring probability", lo=0.0, hi=1.0)}, _check_small_world)
def small_world(n: int, rng: np.random.Generator, k: int = 4, p: float = 0.1) -> nx.DiGraph:
    """Watts–Strogatz small world (undirected)."""
    import networkx as nx

    return nx.DiGraph(nx.watts_strogatz_graph(n, k, p, seed=_seed(rng)))


def _check_scale_free(n: int, path: str, params: dict) -> None:
    m = params.get("m", 2)
    _need(m <= n - 1, path, "m", m, f"an int in [1, n-1 = {n - 1}]")


@_topology("scale_free", {"m": Field("int", 2, "edges attached by each new node", lo=1)},
           _check_scale_free)
def scale_free(n: int, rng: np.random.Generator, m: int = 2) -> nx.DiGraph:
    """Barabási–Albert preferential attachment (undirected)."""
    import networkx as nx

    return nx.DiGraph(nx.barabasi_albert_graph(n, m, seed=_seed(rng)))


@_topology("random_geometric", {"radius": Field(
    "float", 0.3, "connection radius in the unit square", lo=0.0, lo_open=True)})
def random_geometric(n: int, rng: np.random.Generator, radius: float = 0.3) -> nx.DiGraph:
    """Nodes uniform in the unit square, linked both ways within ``radius``; stores ``pos``."""
    import networkx as nx

    pos = rng.random((n, 2))
    close = np.linalg.norm(pos[:, None, :] - pos[None, :, :], axis=-1) <= radius
    np.fill_diagonal(close, False)
    src, dst = np.nonzero(close)
    graph = _from_edges(n, src, dst, undirected=False)
    nx.set_node_attributes(graph, {i: tuple(p) for i, p in enumerate(pos.tolist())}, "pos")
    return graph


def _block_sizes(n: int, sizes: list[int] | None, blocks: int | None) -> list[int]:
    """Explicit ``sizes`` or ``blocks`` near-equal blocks (the first n mod blocks get one more)."""
    if sizes is not None:
        return list(sizes)
    return [n // blocks + (b < n % blocks) for b in range(blocks)]


def _check_sbm(n: int, path: str, params: dict) -> None:
    sizes, blocks = params.get("sizes"), params.get("blocks")
    _need(sizes is not None or blocks is not None, path, "sizes", sizes,
          "a list of block sizes, or set blocks")
    _need(sizes is None or sum(sizes) == n, path, "sizes", sizes, f"sizes summing to n = {n}")
    _need(sizes is None or blocks is None or len(sizes) == blocks, path, "blocks", blocks,
          f"len(sizes) = {len(sizes or [])} or null")
    _need(blocks is None or blocks <= n, path, "blocks", blocks, f"an int in [1, n = {n}]")


@_topology("sbm", {
    "sizes": Field("list", None, "block sizes (sum n)", item="int", lo=1, nullable=True),
    "blocks": Field("int", None, "number of near-equal blocks (if sizes is null)", lo=1,
                    nullable=True),
    "p_in": Field("float", 0.5, "edge probability inside a block", lo=0.0, hi=1.0),
    "p_out": Field("float", 0.05, "edge probability between blocks", lo=0.0, hi=1.0),
    "directed": Field("bool", False, "draw i->j and j->i independently")}, _check_sbm)
def sbm(n: int, rng: np.random.Generator, sizes: list[int] | None = None,
        blocks: int | None = None, p_in: float = 0.5, p_out: float = 0.05,
        directed: bool = False) -> nx.DiGraph:
    """Stochastic block model; node attribute ``block`` holds the ground-truth block."""
    import networkx as nx

    sz = _block_sizes(n, sizes, blocks)
    probs = np.full((len(sz), len(sz)), p_out)
    np.fill_diagonal(probs, p_in)
    g = nx.stochastic_block_model(sz, probs.tolist(), seed=_seed(rng), directed=directed)
    graph = nx.DiGraph(g)
    labels = np.repeat(np.arange(len(sz)), sz)
    nx.set_node_attributes(graph, dict(enumerate(labels.tolist())), "block")
    return graph


# --------------------------------------------------------------------------- from a file

def _read_edge_list(path: Path) -> nx.DiGraph:
    """Edge list "src dst" (whitespace or comma separated) per line; # starts a comment."""
    import networkx as nx

    graph = nx.DiGraph()
    for line in path.read_text().splitlines():
        tokens = line.split("#", 1)[0].replace(",", " ").split()
        if len(tokens) >= 2:
            graph.add_edge(tokens[0], tokens[1])
    return graph


def _read_graph(path: str, undirected: bool) -> nx.DiGraph:
    """Read an edge list or GraphML file, relabelled to 0..m-1 in sorted label order."""
    import networkx as nx

    file = Path(path)
    if file.suffix.lower() == ".graphml":
        raw = nx.read_graphml(file)
        graph = nx.DiGraph(raw)
    else:
        graph = _read_edge_list(file)
    if undirected:
        graph = nx.DiGraph(graph.to_undirected())
    labels = list(graph.nodes)
    numeric = all(str(v).lstrip("-").isdigit() for v in labels)
    order = sorted(labels, key=(lambda v: int(v)) if numeric else str)
    return nx.relabel_nodes(graph, {v: i for i, v in enumerate(order)})


def _check_file(n: int, path: str, params: dict) -> None:
    file, undirected = params["path"], params.get("undirected", False)
    suffixes = EDGE_LIST_SUFFIXES + (".graphml",)
    _need(Path(file).suffix.lower() in suffixes, path, "path", file,
          "a file ending in " + ", ".join(suffixes))
    read_text(file, f"{path}.path", "edge list or GraphML file")
    count = _read_graph(file, undirected).number_of_nodes()
    _need(count == n, path, "path", file,
          f"a graph with n = {n} nodes (the file has {count} nodes)")


@_topology("file", {
    "path": Field("str", doc="edge list (.txt/.csv/.edges, 'src dst' per line) or .graphml"),
    "undirected": Field("bool", False, "add the reverse of every edge")}, _check_file)
def from_file(n: int, rng: np.random.Generator, path: str, undirected: bool = False) -> nx.DiGraph:
    """Graph read from a file (GraphML undirected graphs get both directions), nodes relabelled."""
    return _read_graph(path, undirected)
