"""Batch normalisation with per-client running statistics, ResNet-9 and MobileNet-v2: the
batched bank against independent torch.nn modules trained with torch.optim.SGD."""
import pytest
import torch
import torch.nn.functional as F

from netsim.errors import ConfigError
from netsim.models import build_model
from netsim.runtime import ClientBank
from netsim.runtime.sgd import SGD
from tests.sgd_reference import reference_optimizers, step_both

N, B, K = 3, 4, 5
RESNET = {"name": "resnet9", "width": 0.0625}          # channels 4, 8, 16, 32
MOBILENET = {"name": "mobilenet_v2", "width": 0.25, "hidden": 12}


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _bank(spec, backend, shape=(3, 16, 16), n=N, dtype=torch.float64):
    model = build_model({**spec, "backend": backend}, shape, K, "classification", device="cpu")
    return ClientBank(model, n, "cpu", _gen(), same_init=False, dtype=dtype)


def _batch(shape=(3, 16, 16), n=N, seed=1, dtype=torch.float64):
    g = _gen(seed)
    return (torch.randn(n, B, *shape, generator=g, dtype=dtype),
            torch.randint(0, K, (n, B), generator=g))


def _client(bank, i):
    """Client i's parameters, running statistics and counters, as one state dict."""
    return {**{k: v[i] for k, v in bank.params().items()},
            **{k: v[i] for k, v in bank.buffers().items()}}


def _references(bank):
    return [bank.model.reference(_client(bank, i)).to(bank.flat.dtype) for i in range(bank.n)]


def _assert_matches(bank, refs, atol):
    for i, ref in enumerate(refs):
        mine = _client(bank, i)
        for name, value in ref.state_dict().items():
            torch.testing.assert_close(mine[name].to(value.dtype), value, atol=atol, rtol=0,
                                       msg=f"client {i}: {name}")


# float64: the acceptance tolerance is about the bank, not about float32 kernel rounding
@pytest.mark.parametrize("backend", ["loop", "vmap"])
def test_resnet9_sgd_and_running_stats_match_reference(backend):
    bank = _bank(RESNET, backend)
    assert bank.model.buffers and bank.running.shape == (N, sum(
        v[0] for v in bank.model.buffers.values()))
    refs = _references(bank)
    opts = reference_optimizers(refs, lr=0.05, momentum=0.9, weight_decay=1e-4)
    for step in range(3):
        step_both(bank, refs, opts, *_batch(seed=step), tol=1e-8)
    assert torch.equal(bank.tracked, torch.full((N,), 3))
    _assert_matches(bank, refs, atol=1e-5)
    # (b) eval mode: the running statistics, as the module's .eval()
    x, y = _batch(seed=9)
    mask = torch.ones(N, B, dtype=torch.bool)
    acc, eval_loss = bank.evaluate(x, y, mask)
    for i, ref in enumerate(refs):
        with torch.no_grad():
            out = ref.eval()(x[i])
        assert eval_loss[i].item() == pytest.approx(F.cross_entropy(out, y[i]).item(), abs=1e-6)
        assert acc[i].item() == pytest.approx((out.argmax(1) == y[i]).double().mean().item())
    # train-mode and eval-mode losses differ: evaluate really uses the running statistics
    assert not torch.allclose(eval_loss, bank.loss(x, y))


@pytest.mark.parametrize("backend", ["loop", "grouped", "vmap"])
def test_recorded_batch_statistics_are_batchnorm2ds(backend):
    """A training pass records each client's batch mean and unbiased variance as
    torch.nn.BatchNorm2d computes them for its running statistics (bit for bit on the loop, whose
    kernel is the same; to rounding on the other backends), and the same outputs as without."""
    model = build_model({**RESNET, "backend": backend}, (3, 16, 16), K, "classification", "cpu")
    bank = ClientBank(model, N, "cpu", _gen(), same_init=False, dtype=torch.float32)
    x, _ = _batch(dtype=torch.float32)
    stats = {}
    out = model.forward(bank.params(), x, stats=stats)
    assert torch.equal(out, model.forward(bank.params(), x))
    first = _references(bank)[0][:2]                    # view, conv1 of client 0 (no bias)
    h = first(x[0])
    bn = torch.nn.BatchNorm2d(h.shape[1], momentum=1.0).train()
    bn(h)
    exact = backend == "loop"
    for name, ref in (("bn1.running_mean", bn.running_mean), ("bn1.running_var", bn.running_var)):
        got = stats[name][0]
        assert torch.equal(got, ref) if exact else torch.allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_subset_steps_update_only_the_stepped_clients():
    bank = _bank(RESNET, "loop")
    full = bank.copy()
    x, y = _batch()
    before = bank.running.clone()
    chosen = torch.tensor([2, 0])
    bank.sgd_step(x[chosen], y[chosen], SGD(lr=0.1), clients=chosen)
    full.sgd_step(x, y, SGD(lr=0.1))
    assert torch.equal(bank.running[1], before[1]) and bank.tracked.tolist() == [1, 0, 1]
    torch.testing.assert_close(bank.running[chosen], full.running[chosen], atol=1e-12, rtol=0)
    # pure functions of the parameters: loss, grad and evaluate leave the statistics alone
    state = bank.state_dict()
    bank.loss(x, y), bank.grad(x, y), bank.evaluate(x, y, torch.ones(N, B, dtype=torch.bool))
    assert torch.equal(bank.running, state["running"])
    # set_rows and mix move parameters only; copy and checkpoints carry the statistics
    bank.set_rows(None, full.flat[0])
    bank.mix(torch.full((N, N), 1.0 / N, dtype=torch.float64))
    assert torch.equal(bank.running, state["running"])
    twin = bank.copy()
    twin.sgd_step(x, y, SGD(lr=0.1))
    assert not torch.equal(twin.running, bank.running)
    twin.load_state_dict(state)
    assert torch.equal(twin.running, bank.running) and torch.equal(twin.tracked, bank.tracked)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")  # inside torch.func.jvp
@pytest.mark.parametrize("backend", ["loop", "vmap"])
def test_func_grad_over_loss_fn_matches_autograd(backend):
    bank = _bank(RESNET, backend)
    x, y = _batch()
    c = torch.tensor([0, 2])
    rows = bank.flat[c]

    def total(r):
        return bank.loss_fn(r, x[c], y[c], c).sum()

    g = torch.func.grad(total)(rows)
    _, g_autograd = bank.grad(x[c], y[c], c)
    torch.testing.assert_close(g, g_autograd, atol=1e-10, rtol=1e-8)
    for i, ci in enumerate(c.tolist()):
        ref = bank.model.reference(_client(bank, ci)).double()
        F.cross_entropy(ref(x[ci]), y[ci]).backward()
        ref_g = torch.cat([p.grad.flatten() for p in ref.parameters()])
        torch.testing.assert_close(g[i], ref_g, atol=1e-10, rtol=1e-8)
    # Hessian-vector products: forward-over-reverse and reverse-over-reverse agree with plain
    # autograd's double backward (finite differences are useless across ReLU / max-pool kinks)
    v = torch.randn(rows.shape, generator=_gen(3), dtype=rows.dtype)
    _, hv = torch.func.jvp(torch.func.grad(total), (rows,), (v,))
    _, vjp = torch.func.vjp(torch.func.grad(total), rows)
    r = rows.clone().requires_grad_()
    (g2,) = torch.autograd.grad(bank.loss(x[c], y[c], c, flat=r).sum(), r, create_graph=True)
    (expected,) = torch.autograd.grad((g2 * v).sum(), r)
    torch.testing.assert_close(hv, expected, atol=1e-9, rtol=1e-8)
    torch.testing.assert_close(vjp(v)[0], expected, atol=1e-9, rtol=1e-8)
    assert torch.equal(bank.tracked, torch.zeros(N, dtype=torch.long))


@pytest.mark.parametrize("backend", ["loop", "vmap", "grouped"])
def test_mobilenet_v2_forward_reference_and_step(backend):
    bank = _bank(MOBILENET, backend)
    x, y = _batch()
    params = bank.params()
    out = bank.model.forward(params, x)
    assert out.shape == (N, B, K)
    refs = _references(bank)
    bank.sgd_step(x, y, SGD(lr=0.1))
    for i, ref in enumerate(refs):
        ref_out = ref(x[i])
        torch.testing.assert_close(out[i], ref_out, atol=1e-10, rtol=0)
        F.cross_entropy(ref_out, y[i]).backward()
        torch.optim.SGD(ref.parameters(), lr=0.1).step()
    _assert_matches(bank, refs, atol=1e-5)


def test_architectures():
    resnet = build_model("resnet9", (3, 32, 32), 10, "classification")
    assert resnet.num_params == 6573130  # DAWNBench ResNet-9 (+ the linear layer's bias)
    mobile = build_model("mobilenet_v2", (3, 32, 32), 10, "classification")
    # torchvision's mobilenet_v2() (1000 classes: 3,504,872) + PDBO's extra Linear(1000, 10)
    assert mobile.num_params == 3504872 + 1000 * 10 + 10
    assert len(mobile.counters) == 52 and len(mobile.buffers) == 104
    blocks = [layer for layer in mobile.layers if getattr(layer, "layers", None)]
    assert len(blocks) == 17 and sum(type(b).__name__ == "Residual" for b in blocks) == 10
    with pytest.raises(ConfigError) as err:
        build_model("resnet9", (3, 4, 4), 10, "classification")
    assert "at least" in str(err.value)
    with pytest.raises(ConfigError):
        build_model({"name": "resnet9", "width": 0}, (3, 32, 32), 10, "classification")


def test_models_without_batchnorm_have_no_buffers():
    bank = ClientBank(build_model("cnn", (1, 8, 8), K, "classification"), N, "cpu", _gen())
    x, y = _batch((1, 8, 8), dtype=torch.float32)
    bank.sgd_step(x, y, SGD(lr=0.1, momentum=0.9))
    assert bank.running is None and bank.buffers() == {}
    assert set(bank.state_dict()) == {"flat", "momentum"}


def test_pdbo_ensemble_keeps_running_stats_per_learner():
    from netsim.models.ensemble import EnsembleModel
    base = build_model({**RESNET, "backend": "loop"}, (3, 16, 16), K, "classification")
    bank = ClientBank(EnsembleModel(base, 2), N, "cpu", _gen(), same_init=False,
                      dtype=torch.float64)
    assert bank.running.shape[1] == 2 * sum(v[0] for v in base.buffers.values())
    refs = _references(bank)
    x, y = _batch()
    bank.sgd_step(x, y, SGD(lr=0.1))
    for i, ref in enumerate(refs):
        F.nll_loss(ref(x[i]), y[i]).backward()
        torch.optim.SGD(ref.parameters(), lr=0.1).step()
        for j, learner in enumerate(ref.learners):  # parameters, running statistics, counters
            mine = bank.model._learner(_client(bank, i), j)
            for name, value in learner.state_dict().items():
                torch.testing.assert_close(mine[name].to(value.dtype), value, atol=1e-8, rtol=0)
    _, loss = bank.evaluate(x, y, torch.ones(N, B, dtype=torch.bool))
    for i, ref in enumerate(refs):
        with torch.no_grad():
            assert loss[i].item() == pytest.approx(F.nll_loss(ref.eval()(x[i]), y[i]).item())
