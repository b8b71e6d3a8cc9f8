"""The batched character LSTM against nn.Embedding + nn.LSTM + nn.Linear, per client."""
import math

import pytest
import torch
import torch.nn.functional as F

from netsim.errors import ConfigError
from netsim.models import MODELS, build_model
from netsim.models.ensemble import EnsembleModel
from netsim.runtime import ClientBank
from tests.sgd_reference import reference_optimizers, step_both

M, B, T, V = 3, 4, 12, 80
SPEC = {"name": "char_lstm", "hidden": 16}


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _model(spec=SPEC):
    return build_model(spec, (T,), V, "classification", device="cpu")


def _batch(seed=1):
    g = _gen(seed)
    return (torch.randint(0, V, (M, B, T), generator=g).float(),
            torch.randint(0, V, (M, B), generator=g))


def _refs(model, params):
    return [model.reference({k: v[i] for k, v in params.items()}) for i in range(M)]


def test_registered_with_defaults_and_counts():
    assert "char_lstm" in MODELS.names()
    model = build_model("char_lstm", (80,), V, "classification")
    h = 256
    assert (model.hidden, model.shapes["embed.weight"], model.out_dim) == (h, (V, 8), V)
    ref = model.reference({k: v[0] for k, v in model.init(1, _gen(), "cpu").items()})
    assert model.num_params == sum(p.numel() for p in ref.parameters()) == 819920
    assert list(model.shapes) == list(ref.state_dict())
    per_step = 2 * 4 * h * (8 + h) + 2 * 4 * h * (h + h)
    assert model.flops_per_sample == 80 * per_step + 2 * h * V


def test_forward_and_gradients_match_reference():
    model = _model()
    params = {k: v.requires_grad_() for k, v in model.init(M, _gen(), "cpu").items()}
    x, y = _batch()
    out = model.forward(params, x)
    assert out.shape == (M, B, V)
    loss = F.cross_entropy(out.transpose(1, 2), y, reduction="none").mean(1)
    grads = dict(zip(params, torch.autograd.grad(loss.sum(), list(params.values()))))
    for i, ref in enumerate(_refs(model, {k: v.detach() for k, v in params.items()})):
        ref_out = ref(x[i])
        torch.testing.assert_close(out[i].detach(), ref_out.detach(), atol=1e-5, rtol=1e-5)
        F.cross_entropy(ref_out, y[i]).backward()
        for name, p in ref.named_parameters():
            torch.testing.assert_close(grads[name][i], p.grad, atol=1e-5, rtol=1e-5)


def test_init_follows_pytorch_defaults():
    model = _model()
    params = model.init(20, _gen(), "cpu")
    emb = params["embed.weight"]
    assert abs(emb.mean().item()) < 0.05 and abs(emb.std().item() - 1.0) < 0.05
    assert 0.06 < (emb.abs() > math.sqrt(3)).float().mean().item() < 0.11   # normal, not uniform
    bound = 1 / math.sqrt(16)
    for name, p in params.items():
        if name != "embed.weight":
            assert p.abs().max() <= bound and p.abs().max() > 0.9 * bound
    again = model.init(20, _gen(), "cpu")
    assert all(torch.equal(params[k], again[k]) for k in params)
    assert not torch.equal(params["embed.weight"][0], params["embed.weight"][1])


def test_client_bank_sgd_matches_per_client_sgd():
    bank = ClientBank(_model(), M, "cpu", _gen(), same_init=False)
    refs = _refs(bank.model, bank.params())
    opts = reference_optimizers(refs, lr=0.5, momentum=0.9, weight_decay=1e-4)
    for step in range(4):
        step_both(bank, refs, opts, *_batch(seed=step), tol=1e-5)
    params = bank.params()
    for i, ref in enumerate(refs):
        for name, p in ref.state_dict().items():
            torch.testing.assert_close(params[name][i], p, atol=1e-5, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")  # inside torch.func.jvp
def test_func_grad_and_hessian_vector_products_over_loss_fn():
    """torch.func.grad works, and so does its jvp (HGP's Hessian-vector products; no cuDNN)."""
    bank = ClientBank(_model(), M, "cpu", _gen(), same_init=False)
    x, y = _batch()

    def total(rows):
        return bank.loss_fn(rows, x, y).sum()

    g = torch.func.grad(total)(bank.flat)
    _, expected = bank.grad(x, y)
    assert g.shape == (M, bank.d)
    torch.testing.assert_close(g, expected, atol=1e-6, rtol=1e-5)
    v = torch.randn(bank.flat.shape, generator=_gen(5))
    _, hv = torch.func.jvp(torch.func.grad(total), (bank.flat,), (v,))
    rows = bank.flat.clone().requires_grad_()
    (grad,) = torch.autograd.grad(total(rows), rows, create_graph=True)
    (hv_autograd,) = torch.autograd.grad(grad, rows, v)
    torch.testing.assert_close(hv, hv_autograd, atol=1e-5, rtol=1e-4)


def test_pdbo_ensemble_of_lstms_matches_reference():
    """PDBO-MTL on Shakespeare: K = 3 char LSTMs mixed per client, all M * K in one call."""
    model = EnsembleModel(_model(), 3)
    params = model.init(M, _gen(), "cpu")
    x, _ = _batch()
    out = model.forward(params, x)
    for i, ref in enumerate(_refs(model, params)):
        torch.testing.assert_close(out[i], ref(x[i]), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 8, 8), (8, 8), ()])
def test_needs_token_sequences(shape):
    with pytest.raises(ConfigError) as err:
        build_model("char_lstm", shape, V, "classification")
    assert err.value.field == "model.name" and "token-id sequences" in str(err.value)
