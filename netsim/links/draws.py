"""Uniform draws at chosen positions of a long draw, without drawing the rest (issue 18).

The network models used to draw one number per ordered pair of nodes (``rng.random((n, n))``) and
keep those on the graph's edges. :class:`UniformAt` gives the values such a draw has at chosen
flat positions and leaves the generator exactly where the whole draw leaves it, so the edge-list
models reproduce the dense models' numbers in O(E) memory and time.

For numpy's PCG64 (every stream of :mod:`netsim.util.rng`) it jumps: PCG64 steps its 128-bit state
as ``s <- a s + c`` (mod 2^128) and outputs XSL-RR of the new state, so the state of the k-th output
is ``A_k s + C_k`` with ``A_k = a^k`` and ``C_k = c (a^k - 1) / (a - 1)`` depending on k alone
(O'Neill 2014, section 4.3.1 on jumping ahead). The coefficients of the chosen positions are
computed once, in 64-bit limbs; each draw then costs one 128-bit multiply-add per position. Other
bit generators (or short draws, where it is cheaper) draw every value, in chunks.
"""
from __future__ import annotations

import numpy as np

MULT = 0x2360ED051FC65DA44385DF649FCCF645           # PCG64's multiplier (numpy's pcg64.h)
MASK64 = (1 << 64) - 1
MASK128 = (1 << 128) - 1
_M32 = np.uint64(0xFFFFFFFF)
_S32, _S11, _S58 = np.uint64(32), np.uint64(11), np.uint64(58)
CHUNK = 1 << 20                                      # values per block of a drawn-through draw


def _mul64(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Full 128-bit products of uint64 arrays as (high, low) words."""
    a0, a1, b0, b1 = a & _M32, a >> _S32, b & _M32, b >> _S32
    p01, p10 = a0 * b1, a1 * b0
    mid = ((a0 * b0) >> _S32) + (p01 & _M32) + (p10 & _M32)
    return a1 * b1 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32), a * b


def _mul_add(ah, al, bh, bl, ch, cl) -> tuple[np.ndarray, np.ndarray]:
    """``a * b + c`` mod 2^128 on (high, low) uint64 words."""
    hi, lo = _mul64(al, bl)
    hi = hi + al * bh + ah * bl
    out = lo + cl
    return hi + ch + (out < lo), out


def _words(x: int, shape=()) -> tuple[np.ndarray, np.ndarray]:
    """A 128-bit integer as (high, low) uint64 arrays of ``shape``."""
    return np.full(shape, x >> 64, np.uint64), np.full(shape, x & MASK64, np.uint64)


def _jump(k: int, inc: int) -> tuple[int, int]:
    """(A_k, C_k): k PCG64 steps map a state s to ``A_k s + C_k`` (mod 2^128)."""
    a, c, step_a, step_c = 1, 0, MULT, inc
    while k:
        if k & 1:
            a, c = (step_a * a) & MASK128, (step_a * c + step_c) & MASK128
        step_a, step_c = (step_a * step_a) & MASK128, (step_a * step_c + step_c) & MASK128
        k >>= 1
    return a, c


class UniformAt:
    """``rng.random(total)[positions]``, leaving ``rng`` where that draw leaves it.

    ``__call__(rng)`` may be repeated (one dense draw per call, e.g. a link realisation per step);
    ``uniform(rng, low, high)`` is ``rng.uniform(low, high, total)[positions]``.
    """

    def __init__(self, total: int, positions: np.ndarray):
        self.total = int(total)
        self.positions = np.asarray(positions, np.int64)
        self._inc: int | None = None

    def _coefficients(self, inc: int) -> None:
        """(A_k, C_k) of the outputs at ``positions`` (k = position + 1) and of the whole draw."""
        m = self.positions.size
        ah, al = _words(1, m)
        ch, cl = _words(0, m)
        k = self.positions + 1
        step_a, step_c = MULT, inc
        for bit in range(int(k.max(initial=0)).bit_length()):
            on = (k >> bit) & 1 == 1
            sah, sal = _words(step_a)
            sch, scl = _words(step_c)
            nah, nal = _mul_add(sah, sal, ah[on], al[on], *_words(0))
            nch, ncl = _mul_add(sah, sal, ch[on], cl[on], sch, scl)
            ah[on], al[on], ch[on], cl[on] = nah, nal, nch, ncl
            step_a, step_c = (step_a * step_a) & MASK128, (step_a * step_c + step_c) & MASK128
        self._coef = (ah, al, ch, cl)
        self._whole = _jump(self.total, inc)
        self._inc = inc

    def _cheap_to_draw(self) -> bool:
        """Drawing every value beats jumping (measured: a draw takes 2 ns, a jump 10-50 ns per
        position and 20 us per call)."""
        return self.total <= 16 * self.positions.size + 16384

    def __call__(self, rng: np.random.Generator) -> np.ndarray:
        bitgen = rng.bit_generator
        if not isinstance(bitgen, np.random.PCG64) or self._cheap_to_draw():
            return self._draw_through(rng)
        state = bitgen.state
        s, inc = state["state"]["state"], state["state"]["inc"]
        if inc != self._inc:
            self._coefficients(inc)
        ah, al, ch, cl = self._coef
        hi, lo = _mul_add(ah, al, *_words(s), ch, cl)
        x = hi ^ lo
        rot = hi >> _S58
        out = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
        a, c = self._whole
        state["state"] = {"state": (a * s + c) & MASK128, "inc": inc}
        bitgen.state = state
        return (out >> _S11).astype(np.float64) * (1.0 / 9007199254740992.0)

    def _draw_through(self, rng: np.random.Generator) -> np.ndarray:
        """Every value drawn, in blocks of :data:`CHUNK`, keeping those at ``positions``."""
        if self.total <= CHUNK:
            return rng.random(self.total)[self.positions]
        order = np.argsort(self.positions, kind="stable")
        pos = self.positions[order]
        out = np.empty(pos.size)
        for start in range(0, self.total, CHUNK):
            block = rng.random(min(CHUNK, self.total - start))
            a, b = np.searchsorted(pos, [start, start + block.size])
            out[order[a:b]] = block[pos[a:b] - start]
        return out

    def uniform(self, rng: np.random.Generator, low: float, high: float) -> np.ndarray:
        """``rng.uniform(low, high, total)[positions]`` (numpy computes low + (high - low) u)."""
        low, high = float(low), float(high)
        return low + (high - low) * self(rng)
