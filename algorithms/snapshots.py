"""Immutable rows of one tensor that messages in flight refer to (event-driven algorithms whose
messages carry a sender's state as it was when sent: docs/async.md).

A sender writes its state into a free row and hands the row's number to every message that
carries it; each reference holds the row, and a row that nobody holds is free again. The table
doubles when no row is free (held tensor work reads :attr:`Snapshots.rows` when it runs, so it
sees the new tensor).
"""
from __future__ import annotations

import numpy as np
import torch

from netsim.runtime.mixing import add_rows_product


class Snapshots:
    """``capacity`` rows of ``width`` values with reference counts; ``zero_row``: row 0 is all
    zeros and never freed (a reference to "nothing sent yet")."""

    def __init__(self, capacity: int, width: int, dtype: torch.dtype, device: torch.device,
                 zero_row: bool = False):
        self.rows = torch.zeros(capacity, width, dtype=dtype, device=device)
        self.refs = np.zeros(capacity, np.int64)
        if zero_row:
            self.refs[0] = 2 ** 62
        self.free = list(range(capacity - 1, 0 if zero_row else -1, -1))

    def take(self) -> int:
        """A free row (not yet held)."""
        if not self.free:       # double: the old rows copied once, the new ones zeroed once
            old = len(self.rows)
            grown = self.rows.new_empty((2 * old, self.rows.shape[1]))
            grown[old:].zero_()
            grown[:old] = self.rows
            self.rows = grown
            self.refs = np.concatenate([self.refs, np.zeros(old, np.int64)])
            self.free = list(range(2 * old - 1, old - 1, -1))
        return self.free.pop()

    def add_combination(self, target: torch.Tensor, coeffs: torch.Tensor,
                        index: torch.Tensor | None = None) -> torch.Tensor:
        """``target[index] += coeffs @ rows`` for sparse COO coefficients ``[m, len(rows)]``
        (``index`` None: all of ``target``): each entry the same sums in the same order however
        many rows share the call (netsim.runtime.mixing.add_rows_product)."""
        return add_rows_product(target, coeffs, self.rows, index)

    def hold(self, k: int, count: int = 1) -> None:
        self.refs[k] += count

    def release(self, k: int) -> None:
        """One reference to row k less; free when none is left."""
        self.refs[k] -= 1
        if self.refs[k] == 0:
            self.free.append(k)

    def hold_many(self, rows: np.ndarray) -> None:
        """:meth:`hold` of each of ``rows`` (a row may repeat)."""
        np.add.at(self.refs, rows, 1)

    def release_many(self, rows: np.ndarray) -> None:
        """:meth:`release` of each of ``rows`` (a row may repeat); the rows freed join the free
        list in increasing order."""
        if rows.size:
            np.subtract.at(self.refs, rows, 1)
            freed = rows[self.refs[rows] == 0]
            if freed.size:      # sorted(set()): np.unique costs 10 us on a few rows
                self.free.extend(sorted(set(freed.tolist())))

    def untaken(self, k: int) -> None:
        """Row k was taken but nothing refers to it: free at once."""
        self.free.append(k)
