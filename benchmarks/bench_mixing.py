"""Dense against CSR mixing ``W @ X`` by client count and density: the measurement behind
``netsim.runtime.mixing.SPARSE_MIN_N`` and ``SPARSE_MAX_DENSITY``.

    python benchmarks/bench_mixing.py [--n 30 100 300 1000] [--density 0.01 0.02 0.05 0.1 0.2]
                                      [--d 4000] [--repeats 5] [--threads 1]

``W`` is a column-stochastic matrix with its diagonal and random off-diagonal entries (``density``
of all N^2 entries non-zero, the diagonal included), given as numpy float64 as the algorithms
build it; ``X`` is ``[N, d]`` in float32 (models) and float64 (push-sum states). ``dense`` is
``torch.from_numpy(W).to(X.dtype) @ X``; ``csr`` adds the conversion ``to_sparse_csr()`` (what
:func:`netsim.runtime.mixing.mix` pays on a dense ``W``). Times are the medians of ``repeats``
interleaved calls (thread CPU time, so that other processes on the machine count less).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
import torch

from netsim.util.threads import use_threads


def mixing_matrix(n: int, density: float, rng: np.random.Generator) -> np.ndarray:
    """Column-stochastic ``[n, n]`` with the diagonal and ``density * n^2 - n`` random
    off-diagonal non-zeros (at least none)."""
    w = np.eye(n)
    extra = max(0, int(round(density * n * n)) - n)
    off = rng.choice(n * n - n, size=extra, replace=False)
    rows, cols = np.divmod(off, n - 1)
    cols = cols + (cols >= rows)                     # skip the diagonal
    w[rows, cols] = rng.random(extra)
    return w / w.sum(axis=0, keepdims=True)


def dense(w: np.ndarray, x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(w).to(x.dtype) @ x


def csr(w: np.ndarray, x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(w).to(x.dtype).to_sparse_csr() @ x


def timed(f, *args) -> float:
    start = time.thread_time()
    f(*args)
    return time.thread_time() - start


def measure(n: int, density: float, d: int, dtype: torch.dtype, repeats: int) -> dict:
    """Median milliseconds of dense and CSR mixing, interleaved."""
    rng = np.random.default_rng(0)
    w = mixing_matrix(n, density, rng)
    x = torch.randn(n, d, dtype=dtype)
    times: dict[str, list[float]] = {"dense": [], "csr": []}
    for f in (dense, csr):                           # warm-up
        f(w, x)
    for _ in range(repeats):
        for name, f in (("dense", dense), ("csr", csr)):
            times[name].append(timed(f, w, x))
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[30, 100, 300, 1000])
    ap.add_argument("--density", type=float, nargs="+", default=[0.01, 0.02, 0.05, 0.1, 0.2])
    ap.add_argument("--d", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    use_threads(args.threads)
    warnings.simplefilter("ignore", UserWarning)     # "sparse CSR support is in beta"
    print(f"# d = {args.d}, {args.threads} thread(s), median of {args.repeats}, "
          f"load average {os.getloadavg()[0]:.2f}, torch {torch.__version__}")
    print(f"{'N':>6}{'density':>9}{'dtype':>9}{'dense ms':>10}{'csr ms':>9}{'dense/csr':>11}")
    for n in args.n:
        for density in args.density:
            if density * n < 1:                      # sparser than the diagonal alone
                continue
            for dtype in (torch.float32, torch.float64):
                t = measure(n, density, args.d, dtype, args.repeats)
                print(f"{n:>6}{density:>9.2f}{str(dtype)[6:]:>9}{t['dense']:>10.3f}"
                      f"{t['csr']:>9.3f}{t['dense'] / t['csr']:>11.2f}")


if __name__ == "__main__":
    main()
