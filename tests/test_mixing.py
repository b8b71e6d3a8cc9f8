"""Every shared mixing rule (netsim.runtime.mixing) has the stochasticity its docstring states,
on the graphs it is meant for."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import torch

from netsim.runtime import mixing
from netsim.runtime.mixing import metropolis_weights, push_sum_weights, rows_normalise


def test_push_sum_weights_are_column_stochastic_on_any_directed_realisation():
    rng = np.random.default_rng(0)
    for p in (0.0, 0.1, 0.5, 1.0):
        up = (rng.random((12, 12)) < p) & ~np.eye(12, dtype=bool)
        w = push_sum_weights(up)
        np.testing.assert_allclose(w.sum(axis=0), 1.0, rtol=0, atol=1e-12)
        assert ((w > 0) == (up | np.eye(12, dtype=bool))).all()      # only realised links
        # uniform over the sender's realised out-links and itself
        np.testing.assert_allclose(np.diag(w), 1 / (1 + up.sum(axis=0)))


def test_metropolis_weights_are_doubly_stochastic_and_symmetric_on_undirected_graphs():
    for seed in range(3):
        g = nx.gnp_random_graph(15, 0.3, seed=seed)
        adj = nx.to_numpy_array(g, dtype=bool)
        w = metropolis_weights(adj)
        np.testing.assert_allclose(w, w.T)
        np.testing.assert_allclose(w.sum(axis=0), 1.0, atol=1e-12)
        np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)
        assert (w >= 0).all() and (w[adj] > 0).all() and (w[~adj & ~np.eye(15, dtype=bool)] == 0).all()


def test_rows_normalise_is_row_stochastic_and_keeps_an_empty_row_home():
    rng = np.random.default_rng(1)
    w = rng.random((6, 6)) * (rng.random((6, 6)) < 0.5)
    w[2] = 0.0
    out = rows_normalise(w)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    assert out[2, 2] == 1.0 and out[2].sum() == 1.0


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_mix_takes_the_same_sums_on_every_path():
    """Above SPARSE_MIN_N a sparse numpy W mixes a float64 state through scipy's CSR product:
    equal to torch's CSR product and to the dense product up to rounding (two libraries' sums
    agree bit for bit only in some version pairs: bit-identity is claimed within one locked
    environment, tests/test_fingerprint.py); a float32 state takes torch's CSR product itself."""
    import torch

    from netsim.runtime.mixing import SPARSE_MIN_N, mix

    rng = np.random.default_rng(1)
    n = SPARSE_MIN_N
    W = push_sum_weights(rng.random((n, n)) < 3 / n)
    X = torch.randn(n, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    fast = mix(W, X)
    assert torch.allclose(fast, torch.from_numpy(W).to_sparse_csr() @ X, rtol=0, atol=1e-14)
    assert torch.allclose(fast, torch.from_numpy(W) @ X, rtol=0, atol=1e-13)
    assert torch.equal(mix(W, X.float()), torch.from_numpy(W).float().to_sparse_csr() @ X.float())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_add_rows_product_in_blocks_is_one_product_bit_for_bit(monkeypatch, dtype):
    """Column blocks (here 40 of a 1,000-wide table) give each output row the same sums in the
    same order as one product, repeated and unsorted coefficients included, added into the
    target's rows ``index`` (or all of it); few non-zeros (no more than the table's rows) take
    one product."""
    g = torch.Generator().manual_seed(0)
    rows = torch.randn(30, 1000, generator=g, dtype=dtype) * 1e3
    at = torch.randint(0, 30, (2, 200), generator=g)
    at[0] %= 12
    coeffs = torch.sparse_coo_tensor(at, torch.randn(200, generator=g, dtype=dtype), (12, 30),
                                     check_invariants=True)
    whole = torch.sparse.mm(coeffs, rows)
    monkeypatch.setattr(mixing, "BLOCK_BYTES", 30 * 40 * rows.element_size())
    monkeypatch.setattr(mixing, "BLOCK_MIN_COLUMNS", 1)
    calls = []
    real = torch.sparse.mm
    monkeypatch.setattr(torch.sparse, "mm", lambda a, b: calls.append(b.shape) or real(a, b))
    base = torch.randn(20, 1000, generator=g, dtype=dtype)
    index = torch.randperm(20, generator=g)[:12]
    want = base.clone()
    want[index] += whole
    assert torch.equal(mixing.add_rows_product(base.clone(), coeffs, rows, index), want)
    assert calls == [(30, 40)] * 25
    assert torch.equal(mixing.add_rows_product(base[:12].clone(), coeffs, rows),
                       base[:12] + whole)
    calls.clear()
    few = torch.sparse_coo_tensor(at[:, :30], torch.ones(30, dtype=dtype), (12, 30),
                                  check_invariants=True)
    assert torch.equal(mixing.add_rows_product(base[:12].clone(), few, rows),
                       base[:12] + real(few, rows))
    assert calls == [(30, 1000)]
