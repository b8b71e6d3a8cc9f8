"""Directed edge lists: the engine's O(E) view of a graph (issue 18, "edge lists instead of dense
N x N arrays").

:class:`Edges` holds the E directed edges of a graph on n nodes (no self loops) in
**receiver-major** order, sorted by (dst, src): the order in which ``np.nonzero`` lists the
entries of a receiver-major ``[dst, src]`` mask, so an array over the edges is the row-major list
of a dense matrix's entries on the graph. ``in_ptr`` are the CSR offsets of each receiver's
in-edges; ``out_order`` lists the edges sender-major, sorted by (src, dst) (the row-major order of
a ``[src, dst]`` matrix), with its offsets ``out_ptr``.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import networkx as nx


class Edges:
    """The directed edges ``src -> dst`` of a graph on ``n`` nodes, receiver-major."""

    def __init__(self, n: int, src: np.ndarray, dst: np.ndarray):
        src, dst = np.asarray(src, np.int64).ravel(), np.asarray(dst, np.int64).ravel()
        keep = src != dst
        self.n = int(n)
        self.key = np.unique(dst[keep] * self.n + src[keep])     # dst * n + src, sorted
        self.dst, self.src = np.divmod(self.key, self.n)

    @classmethod
    def from_graph(cls, graph: nx.DiGraph) -> Edges:
        """The edges of a networkx graph on nodes 0..n-1."""
        pairs = np.asarray(list(graph.edges()), np.int64).reshape(-1, 2)
        return cls(graph.number_of_nodes(), pairs[:, 0], pairs[:, 1])

    @classmethod
    def from_matrix(cls, a: np.ndarray, sender_major: bool = False) -> Edges:
        """The non-zero entries of a square matrix, ``[dst, src]`` (or ``[src, dst]``)."""
        rows, cols = np.nonzero(np.asarray(a))
        return cls(len(a), rows, cols) if sender_major else cls(len(a), cols, rows)

    @classmethod
    def coerce(cls, graph: Edges | np.ndarray) -> Edges:
        """``graph`` itself, or the edges of a sender-major adjacency ``[src, dst]`` (the network
        models' historical argument)."""
        return graph if isinstance(graph, Edges) else cls.from_matrix(graph, sender_major=True)

    def __len__(self) -> int:
        return int(self.key.size)

    @cached_property
    def in_ptr(self) -> np.ndarray:
        """CSR offsets: node i's in-edges are ``in_ptr[i]:in_ptr[i + 1]``."""
        return np.searchsorted(self.dst, np.arange(self.n + 1))

    @cached_property
    def out_order(self) -> np.ndarray:
        """Edge ids sorted by (src, dst)."""
        return np.lexsort((self.dst, self.src))

    @cached_property
    def out_ptr(self) -> np.ndarray:
        """CSR offsets into :attr:`out_order`: node j's out-edges are
        ``out_order[out_ptr[j]:out_ptr[j + 1]]``."""
        return np.searchsorted(self.src[self.out_order], np.arange(self.n + 1))

    @cached_property
    def send_order(self) -> np.ndarray:
        """Edge ids by sender, each sender's edges in rotated destination order (``(dst - src)
        mod n``): the order of a sender's uplink queue. Every edge has its own key, so the
        messages of an exchange are this order filtered."""
        return np.lexsort(((self.dst - self.src) % self.n, self.src))

    def find(self, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
        """Edge id of each pair ``src -> dst``, -1 where the graph has no such edge."""
        k = np.asarray(dst, np.int64) * self.n + np.asarray(src, np.int64)
        i = np.minimum(np.searchsorted(self.key, k), max(len(self) - 1, 0))
        hit = self.key[i] == k if len(self) else np.zeros(k.shape, bool)
        return np.where(hit, i, -1)

    def positions(self, symmetric: bool = False) -> np.ndarray:
        """Flat index of each edge in a row-major draw over ``[src, dst]`` (``n * n`` values);
        ``symmetric``: of the upper-triangle entry ``[min, max]`` both directions share."""
        if symmetric:
            return np.minimum(self.src, self.dst) * self.n + np.maximum(self.src, self.dst)
        return self.src * self.n + self.dst

    def gather(self, a: np.ndarray, sender_major: bool = False) -> np.ndarray:
        """A dense ``[dst, src]`` (or ``[src, dst]``) matrix's values on the edges."""
        return a[self.src, self.dst] if sender_major else a[self.dst, self.src]

    def matrix(self, values, fill=0, sender_major: bool = False) -> np.ndarray:
        """The dense ``[dst, src]`` (or ``[src, dst]``) matrix holding ``values`` on the edges
        and ``fill`` elsewhere."""
        values = np.asarray(values)
        out = np.full((self.n, self.n), fill, dtype=np.result_type(values, np.asarray(fill)))
        if sender_major:
            out[self.src, self.dst] = values
        else:
            out[self.dst, self.src] = values
        return out

    def restrict(self, k: int) -> tuple[Edges, np.ndarray]:
        """The subgraph on nodes ``0..k-1`` and the mask of its edges among these."""
        inside = (self.src < k) & (self.dst < k)
        return Edges(k, self.src[inside], self.dst[inside]), inside
