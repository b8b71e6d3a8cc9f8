"""Batched models: shapes, parameter counts, init, backends agreeing, reference twins, errors."""
import pytest
import torch

from netsim.errors import ConfigError
from netsim.models import MODELS, auto_backend, build_model

CONV_CASES = [("cnn", (1, 8, 8)), ("cnn", (8, 8)), ("lenet5", (1, 28, 28)),
              ("lenet5", (3, 32, 32)), ({"name": "femnist_cnn", "hidden": 16}, (1, 28, 28))]


def _randn(*shape):
    """Seeded inputs: a near-tie inside a max-pool window could otherwise route gradients
    differently between backends on rare draws."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _params(model, n=3, seed=0):
    return model.init(n, torch.Generator().manual_seed(seed), "cpu")


def test_registry_lists_all_models():
    assert set(MODELS.names()) >= {"logreg", "mlp", "mean", "lenet5", "femnist_cnn", "cnn"}


@pytest.mark.parametrize("spec, shape, classes, count", [
    ("logreg", (64,), 10, 64 * 10 + 10),
    ({"name": "mlp", "hidden": [64]}, (8, 8), 10, 64 * 64 + 64 + 64 * 10 + 10),
    ({"name": "mlp", "hidden": [5, 7]}, (4,), 3, 4 * 5 + 5 + 5 * 7 + 7 + 7 * 3 + 3),
    ("mean", (2,), 2, 2),
    ("lenet5", (3, 32, 32), 10, 62006),  # the classic CIFAR LeNet-5 count
    ("lenet5", (1, 28, 28), 10, 44426),
    ("femnist_cnn", (1, 28, 28), 62, 6603710),  # DPFL's FEMNIST CNN
    ("cnn", (1, 8, 8), 10, 16 * 9 + 16 + 16 * 4 * 4 * 10 + 10),
])
def test_param_counts(spec, shape, classes, count):
    model = build_model(spec, shape, classes, "classification", device="cpu")
    assert model.num_params == count
    assert list(model.shapes) == list(dict.fromkeys(model.shapes))


def test_flops_and_default_hidden():
    assert build_model("logreg", (64,), 10, "classification").flops_per_sample == 2 * 64 * 10
    mlp = build_model("mlp", (64,), 10, "classification")
    assert mlp.shapes["fc1.weight"] == (64, 64) and mlp.backend == "bmm"
    cnn = build_model({"name": "cnn", "channels": 4}, (1, 8, 8), 10, "classification")
    assert cnn.flops_per_sample == 2 * (9 * 4 * 64 + 4 * 16 * 10)


@pytest.mark.parametrize("spec, shape", [("logreg", (8, 8)), ("mlp", (1, 8, 8)), *CONV_CASES])
def test_forward_shape_and_reference(spec, shape):
    model = build_model(spec, shape, 5, "classification", device="cpu")
    params = _params(model)
    x = _randn(3, 4, *shape)
    out = model.forward(params, x)
    assert out.shape == (3, 4, 5)
    for i in range(3):
        ref = model.reference({k: v[i] for k, v in params.items()})
        torch.testing.assert_close(out[i], ref(x[i]), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("spec, shape", CONV_CASES)
def test_conv_backends_agree(spec, shape):
    base = spec if isinstance(spec, dict) else {"name": spec}
    x = _randn(3, 4, *shape)
    outs, grads = [], []
    for backend in ("loop", "vmap", "grouped"):
        model = build_model({**base, "backend": backend}, shape, 5, "classification")
        assert model.backend == backend
        params = {k: v.requires_grad_() for k, v in _params(model).items()}
        out = model.forward(params, x)
        grads.append(torch.autograd.grad(out.square().sum(), list(params.values())))
        outs.append(out.detach())
    for out, grad in zip(outs[1:], grads[1:]):
        torch.testing.assert_close(out, outs[0], atol=1e-5, rtol=1e-5)
        for g, g0 in zip(grad, grads[0]):
            torch.testing.assert_close(g, g0, atol=1e-4, rtol=1e-4)


def test_auto_backend_is_a_fixed_rule():
    assert auto_backend("cpu") == "loop"
    assert build_model("lenet5", (1, 28, 28), 10, "classification", device="cpu").backend == "loop"
    if torch.cuda.is_available():
        assert auto_backend("cuda") == "grouped"


def test_init_independent_reproducible_and_bounded():
    model = build_model("mlp", (6,), 3, "classification")
    a, b = _params(model, n=4, seed=1), _params(model, n=4, seed=1)
    fan_in = {"fc1": 6, "fc2": 64}
    for name, v in a.items():
        assert torch.equal(v, b[name]) and not torch.equal(v[0], v[1])
        bound = fan_in[name[:3]] ** -0.5  # PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        assert 0.5 * bound < v.abs().max() <= bound


def test_mean_model_ignores_input():
    model = build_model("mean", (3,), 4, "regression")
    params = _params(model, n=2)
    assert torch.equal(params["x"], torch.zeros(2, 4))
    params = {"x": torch.arange(8.0).view(2, 4)}
    out = model.forward(params, _randn(2, 5, 3))
    assert out.shape == (2, 5, 4) and torch.equal(out[1, 3], params["x"][1])
    assert torch.equal(model.reference({"x": params["x"][0]})(torch.zeros(5, 3))[2],
                       params["x"][0])


@pytest.mark.parametrize("spec, shape, words", [
    ("lenet5", (1, 8, 8), "lenet5"),           # 8x8 digits are too small for LeNet-5
    ("femnist_cnn", (1, 2, 2), "femnist_cnn"),
    ("cnn", (64,), "(C, H, W)"),
    ({"name": "cnn", "backend": "jit"}, (1, 8, 8), "backend"),
    ({"name": "mlp", "hidden": [0]}, (4,), "hidden"),
    ({"name": "mlp", "width": 3}, (4,), "width"),
    ("resnet", (4,), "model.name"),
])
def test_config_errors(spec, shape, words):
    with pytest.raises(ConfigError) as err:
        build_model(spec, shape, 10, "classification")
    assert words in str(err.value)


def test_too_small_input_message():
    with pytest.raises(ConfigError) as err:
        build_model("lenet5", (1, 8, 8), 10, "classification")
    assert "at least" in str(err.value) and "(1, 8, 8)" in str(err.value)


def test_bad_task_and_classes():
    with pytest.raises(ConfigError):
        build_model("mlp", (4,), 10, "ranking")
    with pytest.raises(ConfigError):
        build_model("mlp", (4,), 0, "classification")
