"""netsim.runtime.rows.copy_rows: the bits of ``index_copy_``, by numpy where it can."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from netsim.runtime import rows
from netsim.runtime.rows import copy_rows


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("k", [1, 5, 40])
@pytest.mark.parametrize("limit", [rows.NUMPY_MAX_BYTES, 0])
def test_copy_rows_is_index_copy(dtype, k, limit, monkeypatch):
    """The same bits as index_copy_ (-0.0, NaN and inf included), with a tensor or numpy index,
    below and above the size numpy takes at several threads; bfloat16, which numpy has not,
    through index_copy_ itself."""
    monkeypatch.setattr(rows, "NUMPY_MAX_BYTES", limit)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    gen = torch.Generator().manual_seed(k)
    dst = (torch.randn(50, 33, generator=gen) * 100).to(dtype)
    src = (torch.randn(k, 33, generator=gen) * 100).to(dtype)
    if dtype.is_floating_point:
        src[0, :3] = torch.tensor([-0.0, float("nan"), float("inf")])
    idx = torch.randperm(50, generator=gen)[:k]
    want = dst.clone().index_copy_(0, idx, src)
    for index in (idx, idx.numpy()):
        got = dst.clone()
        assert copy_rows(got, index, src) is got
        assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def test_views_broadcast_rows_and_autograd():
    """A column block of a wider tensor, a row expanded over the indices, and a source that
    carries autograd history (copied as values) all give index_copy_'s bits."""
    base = torch.arange(60, dtype=torch.float32).view(6, 10)
    view = base[:, 3:7]                                   # strided: numpy writes through it
    idx = torch.tensor([4, 1])
    copy_rows(view, idx, torch.full((2, 4), -1.0))
    assert base[[1, 4], 3:7].eq(-1).all() and base[[0, 2, 3, 5], 3:7].ne(-1).all()
    assert base[:, :3].eq(torch.arange(60.0).view(6, 10)[:, :3]).all()
    row = torch.tensor([7.0, 8.0, 9.0, 10.0])
    got = copy_rows(torch.zeros(5, 4), np.array([0, 3]), row.expand(2, -1))
    assert got[[0, 3]].eq(row).all() and got[[1, 2, 4]].eq(0).all()
    leaf = torch.ones(2, 4, requires_grad=True)
    got = copy_rows(torch.zeros(5, 4), idx, leaf * 3)
    assert got[[4, 1]].eq(3).all() and not got.requires_grad
