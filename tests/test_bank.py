"""ClientBank against a plain per-client nn.Module + torch.optim.SGD reference, and its pieces."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from netsim.errors import ConfigError
from netsim.models import build_model
from netsim.runtime import ClientBank, metropolis_weights, mix, resolve_device, rows_normalise
from netsim.runtime import bank as bank_module
from netsim.runtime.sgd import SGD
from tests.sgd_reference import reference_optimizers, step_both

N, B, K = 4, 8, 5


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _bank(spec="logreg", shape=(6,), k=K, n=N, task="classification", **kw):
    model = build_model(spec, shape, k, task, device="cpu")
    return ClientBank(model, n, "cpu", _gen(), task=task, **kw)


def _batch(shape, n=N, b=B, k=K, seed=1):
    g = _gen(seed)
    return torch.randn(n, b, *shape, generator=g), torch.randint(0, k, (n, b), generator=g)


def _max_diff(bank, refs, rows=None):
    params = bank.params()
    return max((params[name][i] - p).abs().max().item()
               for i, ref in zip(rows or range(bank.n), refs)
               for name, p in ref.state_dict().items())


# LeNet-5 runs in float64: in float32 the 1e-8 rounding differences between batched and
# per-client kernels flip a near-tie in a max-pool / ReLU after ~15 steps (a 4e-4 jump in one
# gradient entry), a genuine discontinuity rather than a bank error.
@pytest.mark.parametrize("spec, shape, dtype", [
    ({"name": "mlp", "hidden": [16]}, (8, 8), torch.float32),
    ("cnn", (1, 8, 8), torch.float32),
    ("lenet5", (1, 28, 28), torch.float64)])
def test_sgd_matches_reference_loop(spec, shape, dtype):
    bank = _bank(spec, shape, same_init=False, dtype=dtype)
    refs = [bank.model.reference({k: v[i] for k, v in bank.params().items()}).to(dtype)
            for i in range(N)]
    opts = reference_optimizers(refs, lr=0.05, momentum=0.9, weight_decay=1e-4)
    for step in range(20):
        x, y = _batch(shape, seed=step)
        step_both(bank, refs, opts, x.to(dtype), y, tol=1e-5)
    assert _max_diff(bank, refs) < 1e-5


def test_nesterov_and_per_client_lr_match_reference():
    bank = _bank(same_init=False)
    lrs = torch.tensor([0.1, 0.2, 0.05, 0.3])
    refs = [bank.model.reference({k: v[i] for k, v in bank.params().items()}) for i in range(N)]
    opts = [torch.optim.SGD(r.parameters(), lr=lrs[i].item(), momentum=0.5, nesterov=True)
            for i, r in enumerate(refs)]
    for step in range(5):
        x, y = _batch((6,), seed=step)
        bank.sgd_step(x, y, SGD(lr=lrs, momentum=0.5, nesterov=True))
        for i, (ref, opt) in enumerate(zip(refs, opts)):
            opt.zero_grad()
            F.cross_entropy(ref(x[i]), y[i]).backward()
            opt.step()
    assert _max_diff(bank, refs) < 1e-6


@pytest.mark.parametrize("as_mask", [False, True])
def test_subset_update_leaves_others_untouched(as_mask):
    bank = _bank(same_init=False)
    chosen = torch.tensor([1, 3])
    clients = torch.tensor([False, True, False, True]) if as_mask else chosen
    before = bank.flat.clone()
    full = bank.copy()
    x, y = _batch((6,))
    loss = bank.sgd_step(x[chosen], y[chosen], SGD(lr=0.1, momentum=0.9), clients=clients)
    full.sgd_step(x, y, SGD(lr=0.1, momentum=0.9))
    assert loss.shape == (2,)
    assert torch.equal(bank.flat[[0, 2]], before[[0, 2]])
    torch.testing.assert_close(bank.flat[chosen], full.flat[chosen], atol=0, rtol=0)
    # momentum: the untouched clients take their first (buffer-free) step later
    fresh = _bank(same_init=False)
    bank.sgd_step(x, y, SGD(lr=0.1, momentum=0.9))
    fresh.sgd_step(x, y, SGD(lr=0.1, momentum=0.9))
    torch.testing.assert_close(bank.flat[[0, 2]], fresh.flat[[0, 2]], atol=0, rtol=0)
    bank.reset_momentum(chosen)  # the next momentum step of these is a plain SGD step
    plain = bank.copy()
    bank.sgd_step(x[chosen], y[chosen], SGD(lr=0.1, momentum=0.9), clients=chosen)
    plain.sgd_step(x[chosen], y[chosen], SGD(lr=0.1), clients=chosen)
    torch.testing.assert_close(bank.flat, plain.flat, atol=0, rtol=0)


@pytest.mark.parametrize("rows", [[2, 3, 4, 10, 11], [0, 5, 6, 7, 19]])
def test_subset_step_by_slices_equals_the_indexed_step(rows, monkeypatch):
    """A subset in few runs of consecutive rows steps slice by slice (here with runs of any
    length: ``MIN_RUN_ROWS = 1``); with no runs allowed (``MAX_RUNS = 0``) the same step goes
    through ``index_add_``: bit for bit the same bank."""
    bank = _bank("mlp", (6,), n=20, same_init=False)
    x, y = _batch((6,), n=20)
    rows = torch.tensor(rows)
    assert bank_module._runs(rows) is not None
    by_slices, indexed = bank.copy(), bank.copy()
    monkeypatch.setattr(bank_module, "MIN_RUN_ROWS", 1)
    sub = torch.Tensor.sub_
    calls = []
    monkeypatch.setattr(torch.Tensor, "sub_", lambda t, *a, **k: calls.append(1) or sub(t, *a, **k))
    by_slices.sgd_step(x[rows], y[rows], SGD(lr=0.1), clients=rows)
    monkeypatch.setattr(torch.Tensor, "sub_", sub)
    assert len(calls) == len(bank.params()) * len(bank_module._runs(rows))   # a slice per run
    monkeypatch.setattr(bank_module, "MAX_RUNS", 0)
    assert bank_module._runs(rows) is None
    indexed.sgd_step(x[rows], y[rows], SGD(lr=0.1), clients=rows)
    assert torch.equal(by_slices.flat, indexed.flat)
    assert not torch.equal(by_slices.flat[rows], bank.flat[rows])
    others = torch.ones(20, dtype=torch.bool)
    others[rows] = False
    assert torch.equal(by_slices.flat[others], bank.flat[others])


def _logreg_grad(bank, x, y):
    """Closed-form gradient of mean cross-entropy for the linear model, per client."""
    p = bank.params()
    w, b = p["fc1.weight"], p["fc1.bias"]
    probs = torch.softmax(torch.einsum("mbi,moi->mbo", x, w) + b[:, None], -1)
    r = (probs - F.one_hot(y, K).float()) / x.shape[1]
    return torch.cat([torch.einsum("mbo,mbi->moi", r, x).flatten(1), r.sum(1)], 1)


def test_prox_clip_and_extra_grad_match_hand_computation():
    bank = _bank(same_init=False)
    x, y = _batch((6,))
    anchor = torch.randn(N, bank.d, generator=_gen(5))
    extra = torch.randn(N, bank.d, generator=_gen(6))
    p0 = bank.flat.clone()
    g = _logreg_grad(bank, x, y)
    clip, mu, lr, wd = 0.1, 0.3, 0.5, 0.01
    norm = g.norm(dim=1, keepdim=True)
    assert (norm > clip).all()
    d_p = g * clip / (norm + 1e-6) + extra + mu * (p0 - anchor) + wd * p0
    bank.sgd_step(x, y, SGD(lr=lr, weight_decay=wd, clip=clip), prox=(mu, anchor),
                  extra_grad=extra)
    torch.testing.assert_close(bank.flat, p0 - lr * d_p, atol=1e-6, rtol=1e-5)
    loss, grad = bank.grad(x, y)
    torch.testing.assert_close(grad, _logreg_grad(bank, x, y), atol=1e-6, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_mix_with_known_matrix_dense_sparse_numpy():
    bank = _bank()
    bank.set_rows(None, torch.arange(N * bank.d, dtype=torch.float32).view(N, bank.d))
    W = torch.tensor([[0.5, 0.5, 0, 0], [0, 1.0, 0, 0], [0.25, 0.25, 0.25, 0.25], [0, 0, 0, 1.0]])
    expected = W @ bank.flat
    for form in (W, W.to_sparse(), W.to_sparse_csr(), W.numpy().astype(np.float64)):
        b = bank.copy()
        b.mix(form)
        torch.testing.assert_close(b.flat, expected)
    n = 1200  # above SPARSE_MIN_N: the CSR path
    W = rows_normalise(torch.eye(n) + torch.diag(torch.ones(n - 1), 1))
    X = torch.randn(n, 3, generator=_gen())
    torch.testing.assert_close(mix(W, X), W @ X)


def test_weight_helpers():
    W = rows_normalise(np.array([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0], [2.0, 2.0, 0.0]]))
    np.testing.assert_allclose(W, [[0.25, 0.75, 0], [0, 1, 0], [0.5, 0.5, 0]])
    adj = np.zeros((4, 4), bool)
    adj[0, 1] = adj[1, 2] = adj[2, 3] = adj[0, 3] = adj[0, 2] = True
    M = metropolis_weights(adj)
    np.testing.assert_allclose(M, M.T)
    np.testing.assert_allclose(M.sum(1), 1)
    assert M[0, 1] == pytest.approx(1 / 4) and M[1, 2] == pytest.approx(1 / 4)
    assert (M >= 0).all() and M[1, 3] == 0
    torch.testing.assert_close(metropolis_weights(torch.from_numpy(adj)),
                               torch.from_numpy(M).float())


@pytest.mark.parametrize("spec, shape", [("mlp", (8, 8)), ("cnn", (1, 8, 8))])
def test_evaluate_matches_reference(spec, shape, monkeypatch):
    monkeypatch.setattr(bank_module, "EVAL_MAX_ROWS", 6)  # forces blocks of clients too
    bank = _bank(spec, shape, same_init=False, loss_scale=torch.tensor([1.0, 2.0, 0.5, 1.0]))
    x, y = _batch(shape, b=11)
    sizes = torch.tensor([11, 3, 7, 1])
    mask = torch.arange(11)[None] < sizes[:, None]
    x[~mask] = 0.0
    acc, loss = bank.evaluate(x, y, mask, chunk=3)
    for i in range(N):
        ref = bank.model.reference({k: v[i] for k, v in bank.params().items()})
        with torch.no_grad():
            out = ref(x[i, :sizes[i]])
        ref_acc = (out.argmax(1) == y[i, :sizes[i]]).float().mean()
        ref_loss = F.cross_entropy(out, y[i, :sizes[i]]) * bank.loss_scale[i]
        assert acc[i].item() == pytest.approx(ref_acc.item(), abs=1e-6)
        assert loss[i].item() == pytest.approx(ref_loss.item(), abs=1e-5)
    acc2, loss2 = bank.evaluate(x[[2]], y[[2]], mask[[2]], clients=torch.tensor([2]))
    torch.testing.assert_close(loss2, loss[[2]])


def test_regression_loss_and_loss_scale():
    bank = _bank("mean", (3,), k=2, task="regression", loss_scale=torch.tensor([1.0, 2, 3, 4]))
    bank.set_rows(None, torch.tensor([1.0, -1.0]))
    y = torch.randn(N, B, 2, generator=_gen())
    x = torch.zeros(N, B, 3)
    expected = 0.5 * (y - torch.tensor([1.0, -1.0])).pow(2).sum(-1).mean(1) * bank.loss_scale
    torch.testing.assert_close(bank.loss(x, y), expected)
    acc, loss = bank.evaluate(x, y, torch.ones(N, B, dtype=torch.bool))
    assert acc is None
    torch.testing.assert_close(loss, expected)
    # gradient of the quadratic: scale * (x - mean(y))
    _, g = bank.grad(x[[3, 1]], y[[3, 1]], clients=torch.tensor([3, 1]))
    torch.testing.assert_close(g, bank.loss_scale[[3, 1], None]
                               * (torch.tensor([1.0, -1.0]) - y[[3, 1]].mean(1)))


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")  # inside torch.func.jvp
def test_hessian_vector_product_closed_form():
    bank = _bank(same_init=False)
    x, y = _batch((6,))
    c = torch.tensor([0, 2, 3])
    xs, ys = x[c], y[c]
    rows = bank.flat[c]
    v = torch.randn(rows.shape, generator=_gen(3))

    def total(r):
        return bank.loss_fn(r, xs, ys, c).sum()

    _, hv = torch.func.jvp(torch.func.grad(total), (rows,), (v,))
    # closed form: per sample, H_z = diag(p) - p p^T acting on dz = V x + v_b
    d_w = 6 * K
    vw, vb = v[:, :d_w].view(-1, K, 6), v[:, d_w:]
    w, b = rows[:, :d_w].view(-1, K, 6), rows[:, d_w:]
    p = torch.softmax(torch.einsum("mbi,moi->mbo", xs, w) + b[:, None], -1)
    dz = torch.einsum("mbi,moi->mbo", xs, vw) + vb[:, None]
    hz = (p * dz - p * (p * dz).sum(-1, keepdim=True)) / B
    expected = torch.cat([torch.einsum("mbo,mbi->moi", hz, xs).flatten(1), hz.sum(1)], 1)
    torch.testing.assert_close(hv, expected, atol=1e-6, rtol=1e-5)
    # plain autograd double backward through bank.loss agrees
    r = rows.clone().requires_grad_()
    (g,) = torch.autograd.grad(bank.loss(xs, ys, c, flat=r).sum(), r, create_graph=True)
    (hv2,) = torch.autograd.grad((g * v).sum(), r)
    torch.testing.assert_close(hv2, expected, atol=1e-6, rtol=1e-5)


def test_init_copy_set_rows_and_checkpoint():
    same = _bank("mlp", (4,))
    assert torch.equal(same.flat[0], same.flat[3]) and same.flat.dtype == torch.float32
    diff = _bank("mlp", (4,), same_init=False)
    assert not torch.equal(diff.flat[0], diff.flat[1])
    assert same.d == same.model.num_params and same.size_bytes == 4 * same.d
    assert same.params()["fc1.weight"].data_ptr() == same.flat.data_ptr()
    x, y = _batch((4,))
    diff.sgd_step(x, y, SGD(lr=0.1, momentum=0.9))
    state = diff.state_dict()
    twin = diff.copy()
    twin.set_rows(torch.tensor([1]), torch.zeros(1, diff.d))
    assert twin.flat[1].abs().sum() == 0 and diff.flat[1].abs().sum() > 0
    diff.sgd_step(x, y, SGD(lr=0.1, momentum=0.9))
    restored = _bank("mlp", (4,))
    restored.load_state_dict(state)
    restored.sgd_step(x, y, SGD(lr=0.1, momentum=0.9))
    assert torch.equal(restored.flat, diff.flat)
    with pytest.raises(ValueError):
        _bank("mlp", (5,)).load_state_dict(state)


@pytest.mark.parametrize("rows", [[0, 1, 2, 5, 6, 9], [3], list(range(0, 20, 2)), [7, 2, 4],
                                  [True, False] * 5 + [False] * 10])
def test_set_rows_of_one_model_writes_exactly_the_listed_rows(rows):
    """One model ``[d]`` into a few runs of rows (slice copies), many runs, an unordered list or
    a mask (index_put): the listed rows get it, the others keep theirs."""
    bank = _bank("mlp", (4,), n=20, same_init=False)
    before, model = bank.flat.clone(), torch.arange(bank.d, dtype=torch.float32)
    bank.set_rows(torch.tensor(rows), model)
    listed = torch.zeros(20, dtype=torch.bool)
    listed[torch.tensor(rows)] = True
    assert torch.equal(bank.flat[listed], model.expand(int(listed.sum()), -1))
    assert torch.equal(bank.flat[~listed], before[~listed])


def test_devices_and_task_checks():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ConfigError):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError):
            resolve_device("cuda")
    with pytest.raises(ConfigError):
        _bank(task="ranking")
