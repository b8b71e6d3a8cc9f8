"""The realised communication graph of every round, kept compact: what the rounds' reports say
their exchanges delivered (``RoundReport.links``, kept by the recorder) and the results' ``links/``
arrays (docs/results_format.md)."""
from __future__ import annotations

import numpy as np

#: most clients whose ``links/`` arrays are written dense (``delivered`` [R, N, N]); above, as
#: edge lists (:meth:`LinksLog.arrays`)
LINKS_DENSE_MAX = 256


class LinksLog:
    """The realised communication graph of every round (``delivered`` [N, N], receiver-major),
    kept compact: a round where under 1/32 of the pairs delivered as its edges (flat indices
    ``i * N + j``), any other as the packed bits of its matrix. ``log[r]`` is round r's matrix."""

    def __init__(self, n: int):
        self.n = n
        self.stored: list[np.ndarray] = []               # per round: edges or bits
        self._index = np.int32 if n * n < 2 ** 31 else np.int64

    def __len__(self) -> int:
        return len(self.stored)

    def append(self, flat: np.ndarray) -> None:
        """Record the next round from the sorted flat indices ``dst * N + src`` of its delivered
        pairs: as those indices when under 1/32 of the pairs, else as packed bits (no ``[N, N]``
        matrix is built in the first case)."""
        if 32 * flat.size < self.n * self.n:
            self.stored.append(np.asarray(flat).astype(self._index))
            return
        d = np.zeros(self.n * self.n, bool)
        d[flat] = True
        self.stored.append(np.packbits(d))

    def __getitem__(self, r: int) -> np.ndarray:
        stored = self.stored[r]
        if stored.dtype == np.uint8:                             # packed bits
            return np.unpackbits(stored, count=self.n * self.n).reshape(self.n, self.n) > 0
        d = np.zeros(self.n * self.n, bool)
        d[stored] = True
        return d.reshape(self.n, self.n)

    def _edges(self, r: int) -> np.ndarray:
        stored = self.stored[r]
        return np.flatnonzero(self[r]) if stored.dtype == np.uint8 else stored

    def arrays(self) -> dict[str, np.ndarray]:
        """The ``links/`` arrays: ``delivered`` [R, N, N] and ``rounds`` [R] up to
        :data:`LINKS_DENSE_MAX` clients; above, edge lists: ``rounds`` [R], ``n``, ``offsets``
        [R + 1] and ``receiver``, ``sender`` [M] (round r's edges are
        ``offsets[r]:offsets[r + 1]``)."""
        rounds = np.arange(len(self))
        if self.n <= LINKS_DENSE_MAX:
            return {"delivered": np.stack([self[r] for r in rounds]), "rounds": rounds}
        edges = [self._edges(r) for r in rounds]
        flat = np.concatenate(edges).astype(np.int64)
        return {"rounds": rounds, "n": np.int64(self.n),
                "offsets": np.concatenate([[0], np.cumsum([e.size for e in edges])]),
                "receiver": (flat // self.n).astype(np.int32),
                "sender": (flat % self.n).astype(np.int32)}


def links_delivered(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """``delivered`` [R, N, N] of ``links/`` arrays, dense or as edge lists
    (:meth:`LinksLog.arrays`)."""
    if "delivered" in arrays:
        return arrays["delivered"]
    n, offsets = int(arrays["n"]), arrays["offsets"]
    d = np.zeros((len(arrays["rounds"]), n, n), bool)
    d[np.repeat(np.arange(len(offsets) - 1), np.diff(offsets)), arrays["receiver"],
      arrays["sender"]] = True
    return d
