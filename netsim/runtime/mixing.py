"""Gossip / aggregation mixing ``X <- W @ X`` over stacked client parameters, and every mixing
rule netsim's algorithms share, each with its stochasticity (receiver-major: ``W[i, j]`` is the
weight of j's state at i):

==========================  ===============================  ==================================
rule                        stochastic                       meant for
==========================  ===============================  ==================================
:func:`rows_normalise`      row (an empty row -> identity)   pull-based averaging (DiPLe, DPFL)
:func:`metropolis_weights`  doubly, symmetric                undirected graphs (D-PSGD)
:func:`push_sum_weights`    column (over j's realised out-   push-sum on directed links (SGP,
                            links and itself)                PDBO; netsim.runtime.pushsum)
==========================  ===============================  ==================================

:func:`mix` multiplies dense ``W`` as is, except when ``N >= SPARSE_MIN_N`` and at most
``SPARSE_MAX_DENSITY`` of its entries are non-zero: then it converts to CSR and uses a sparse
matmul. Measured by ``benchmarks/bench_mixing.py`` (d = 4000, one thread, conversion included;
dense time / CSR time over three runs, float32 and float64): at N = 300 CSR is 1.4-5.5x faster
for densities 1-5 % and no faster from 10 % (0.5-1.3); at N = 1000 4-5x at 1 %, 1.0-1.5x at 5 %;
at N = 100 the runs disagree (0.8-3.3, on 1-2 ms) and at N = 30 the two tie (0.6-1.4). Hence
sparse from N = 300. A ``W`` that is already a torch sparse tensor (COO or CSR) is used as is.
A numpy ``W`` mixing a float64 state of more than one column on the CPU (push-sum's z with
``state_dtype: float64``) goes through scipy's CSR product: the same sums in the same order as
torch's CSR (bit-identical), 2.2-2.6x faster (torch 2.13's float64 CSR product on the CPU does
not use MKL; measured at N = 300 and 1,000, d = 4,875). A single column (push-sum's weights)
stays with torch: a run with the float32 state then never imports scipy.sparse (76 ms).
"""
from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor

SPARSE_MIN_N = 300
SPARSE_MAX_DENSITY = 0.05

Matrix = Tensor | np.ndarray


def mix(W: Matrix, X: Tensor, out: Tensor | None = None) -> Tensor:
    """``W @ X`` for ``W: [N, N]`` (dense/sparse torch, or numpy) and ``X: [N, d]``; ``out``:
    a tensor the product is written to (not ``X``; the float64 scipy product makes its own)."""
    if isinstance(W, np.ndarray):
        if _sparse(W):
            key = np.flatnonzero(W)
            return mix_entries(len(W), key, W.ravel()[key], X, out)
        W = torch.from_numpy(W)
    W = W.to(device=X.device, dtype=X.dtype)
    if W.layout == torch.strided and _sparse(W):
        with warnings.catch_warnings():  # "sparse CSR support is in beta"
            warnings.simplefilter("ignore", UserWarning)
            return _csr_product(W.to_sparse_csr(), X, out)
    return torch.mm(W, X, out=out)


def mix_entries(n: int, key: np.ndarray, value: np.ndarray, X: Tensor,
                out: Tensor | None = None) -> Tensor:
    """``W @ X`` for the ``W: [n, n]`` whose non-zero entries are ``value`` at the sorted flat
    receiver-major positions ``key`` (``i * n + j``): the same product as :func:`mix` of the
    dense ``W`` (the same path and sums), without an ``n x n`` pass when it goes sparse;
    ``out`` as :func:`mix`'s."""
    if n < SPARSE_MIN_N or key.size > SPARSE_MAX_DENSITY * n * n:
        W = np.zeros(n * n)
        W[key] = value
        return mix(W.reshape(n, n), X, out)
    rows, cols = np.divmod(key, n)
    indptr = np.searchsorted(rows, np.arange(n + 1))
    if X.dtype == torch.float64 and X.device.type == "cpu" and X.shape[1] > 1:
        from scipy.sparse import csr_matrix
        return torch.from_numpy(csr_matrix((value, cols, indptr), shape=(n, n)) @ X.numpy())
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        W = torch.sparse_csr_tensor(torch.as_tensor(indptr), torch.as_tensor(cols),
                                    torch.as_tensor(value, dtype=X.dtype), size=(n, n),
                                    device=X.device, check_invariants=False)  # valid as built
        return _csr_product(W, X, out)


def _csr_product(W: Tensor, X: Tensor, out: Tensor | None) -> Tensor:
    """``W @ X`` for a CSR ``W``, into ``out`` if given: as ``addmm`` with ``beta = 0`` (the same
    sums; torch 2.13's ``mm`` of a CSR matrix with ``out`` still allocates its result)."""
    return W @ X if out is None else torch.addmm(out, W, X, beta=0, out=out)


#: bytes of a table's rows one column block of :func:`add_rows_product` spans
BLOCK_BYTES = 8 << 20
#: fewest columns of a block
BLOCK_MIN_COLUMNS = 256


def add_rows_product(target: Tensor, coeffs: Tensor, rows: Tensor,
                     index: Tensor | None = None) -> Tensor:
    """``target[index] += coeffs @ rows`` (``index`` None: ``target += coeffs @ rows``) for a
    sparse COO ``coeffs: [m, R]`` and a dense table ``rows: [R, d]`` (the event-driven
    algorithms' snapshot tables); returns ``target``. One product reads a whole row of the table
    per non-zero; where the non-zeros outnumber the table's rows (rows read many times), it runs
    on the CPU over column blocks of the table (:data:`BLOCK_BYTES` each), so that a block's rows
    stay in cache, and each block's product is added into its columns of ``target`` (no
    ``[m, d]`` product is assembled). Each entry gets the same sums in the same order either way
    (bit-identical). Asynchronous gradient push at N = 100 (R = 401, d = 9,611, float64, about
    7,000 non-zeros a product): 1.56 -> 1.16-1.26 s of products in a 50-step run with blocks;
    at N = 1,000 (R = 4,001, a few hundred non-zeros) blocks would cost 40% more."""
    width = max(BLOCK_MIN_COLUMNS, BLOCK_BYTES // max(1, rows.shape[0] * rows.element_size()))
    if rows.device.type != "cpu" or coeffs._nnz() <= rows.shape[0] or width >= rows.shape[1]:
        width = rows.shape[1]
    for a in range(0, rows.shape[1], width):
        part, product = target[:, a:a + width], torch.sparse.mm(coeffs, rows[:, a:a + width])
        if index is None:
            part.add_(product)
        else:
            part.index_add_(0, index, product)
    return target


def _sparse(W: Matrix) -> bool:
    """Whether ``W`` is large and sparse enough for a CSR product (:data:`SPARSE_MIN_N`,
    :data:`SPARSE_MAX_DENSITY`)."""
    if W.shape[0] < SPARSE_MIN_N:
        return False
    nonzero = np.count_nonzero(W) if isinstance(W, np.ndarray) else torch.count_nonzero(W).item()
    return nonzero <= SPARSE_MAX_DENSITY * W.shape[0] * W.shape[1]


def rows_normalise(W: Matrix) -> Matrix:
    """Scale each row to sum 1; an all-zero row becomes the identity row (the client keeps its
    own model). Returns the same type as ``W`` (torch dense or numpy)."""
    as_numpy = isinstance(W, np.ndarray)
    T = torch.from_numpy(W) if as_numpy else W
    T = T.to(torch.promote_types(T.dtype, torch.float32))
    s = T.sum(1, keepdim=True)
    out = torch.where(s != 0, T / torch.where(s != 0, s, torch.ones_like(s)),
                      torch.eye(T.shape[0], dtype=T.dtype, device=T.device))
    return out.numpy() if as_numpy else out


def metropolis_weights(adj: Matrix) -> Matrix:
    """Metropolis-Hastings weights of the undirected graph ``adj | adj.T`` (diagonal ignored):
    ``W_ij = 1 / (1 + max(deg_i, deg_j))`` on edges, ``W_ii = 1 - sum_j W_ij``. Symmetric and
    doubly stochastic. Returns float64 numpy for numpy input, float32 torch for torch input."""
    as_numpy = isinstance(adj, np.ndarray)
    A = torch.from_numpy(np.asarray(adj)) if as_numpy else adj
    A = A.to(torch.bool)
    A = (A | A.T) & ~torch.eye(A.shape[0], dtype=torch.bool, device=A.device)
    dtype = torch.float64 if as_numpy else torch.float32
    deg = A.sum(1).to(dtype)
    W = torch.where(A, 1.0 / (1.0 + torch.maximum(deg[:, None], deg[None, :])),
                    torch.zeros((), dtype=dtype, device=A.device))
    W = W + torch.diag(1.0 - W.sum(1))
    return W.numpy() if as_numpy else W


def push_sum_shares(n: int, senders: np.ndarray) -> np.ndarray:
    """``1 / (1 + out-degree)`` of each node, ``[n]``: the share node j pushes on each of its
    realised out-links and keeps, given the sender of every realised link (``senders``, one
    entry per link): the edge form of :func:`push_sum_weights`."""
    return 1.0 / (1.0 + np.bincount(senders, minlength=n))


def push_sum_weights(link_up: np.ndarray) -> np.ndarray:
    """Column-stochastic ``P[i, j] = p_{j->i}`` uniform over j's realised out-links and itself
    (``link_up[i, j]``: the link j->i is up; receiver-major like the engine's arrays)."""
    up = np.asarray(link_up, bool).copy()
    np.fill_diagonal(up, False)
    share = push_sum_shares(len(up), np.nonzero(up)[1])
    np.fill_diagonal(up, True)
    return up * share[None, :]
