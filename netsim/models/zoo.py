"""The model zoo: linear, MLP, the mean vector of the quadratic task and the small CNNs of the
DPFL paper (LeNet-5 for CIFAR, the FEMNIST CNN) plus a tiny CNN for 8x8 digits.

Every builder is ``fn(input_shape, out_dim, backend, **params) -> BatchedModel`` where
``backend`` is already resolved to ``loop``, ``vmap`` or ``grouped`` (dense models ignore it).
"""
from __future__ import annotations

from torch import Tensor, nn

from netsim.models.base import (BatchedModel, Conv, Dense, Layer, MaxPool, Params, ReLU,
                                SequentialModel, View)
from netsim.registry import Registry
from netsim.schema import Field

MODELS = Registry("model")

BACKENDS = ("auto", "loop", "vmap", "grouped")
_BACKEND = Field("str", "auto", choices=BACKENDS,
                 doc="how convolutions batch over clients; auto = vmap on CUDA, loop on CPU")


def _dense_stack(hidden: list[int], out: int, first: int = 1) -> list[Layer]:
    """Flatten, then ``fc{first}`` ... with ReLU between, ending in an ``out``-wide layer."""
    layers: list[Layer] = [View(image=False)]
    for i, width in enumerate(hidden):
        layers += [Dense(f"fc{first + i}", width), ReLU()]
    return layers + [Dense(f"fc{first + len(hidden)}", out)]


def _conv_block(name: str, out: int, kernel: int, padding: int) -> list[Layer]:
    return [Conv(name, out, kernel, padding), ReLU(), MaxPool()]


@MODELS.register("logreg", {})
def logreg(input_shape: tuple, out_dim: int, backend: str) -> BatchedModel:
    """Multinomial logistic / linear regression on flattened inputs."""
    return SequentialModel(input_shape, _dense_stack([], out_dim), "bmm")


@MODELS.register("mlp", {"hidden": Field("list", [64], item="int", lo=1,
                                         doc="widths of the hidden layers (ReLU)")})
def mlp(input_shape: tuple, out_dim: int, backend: str, hidden: list[int]) -> BatchedModel:
    """Multi-layer perceptron on flattened inputs."""
    return SequentialModel(input_shape, _dense_stack(hidden, out_dim), "bmm")


class _MeanModule(nn.Module):
    def __init__(self, x: Tensor):
        super().__init__()
        self.x = nn.Parameter(x)

    def forward(self, inp: Tensor) -> Tensor:
        return self.x.expand(inp.shape[0], -1)


class MeanModel(BatchedModel):
    """One vector ``x`` per client returned for every input (initialised to zeros)."""

    backend = "broadcast"
    flops_per_sample = 0.0

    def __init__(self, k: int):
        self.shapes, self.init_bound, self.out_dim = {"x": (k,)}, {"x": 0.0}, k

    def forward(self, params: Params, x: Tensor) -> Tensor:
        v = params["x"]
        return v.unsqueeze(1).expand(v.shape[0], x.shape[1], v.shape[1])

    def reference(self, params: Params) -> nn.Module:
        return _MeanModule(params["x"].detach().clone())


@MODELS.register("mean", {})
def mean(input_shape: tuple, out_dim: int, backend: str) -> BatchedModel:
    """A free vector of size num_classes (the CoBo quadratic mean-estimation task)."""
    return MeanModel(out_dim)


@MODELS.register("lenet5", {"backend": _BACKEND})
def lenet5(input_shape: tuple, out_dim: int, backend: str) -> BatchedModel:
    """LeNet-5 (DPFL, CIFAR): conv6-pool-conv16-pool-fc120-fc84-fc; inputs >= 16x16."""
    return SequentialModel(input_shape, [View(image=True), *_conv_block("conv1", 6, 5, 0),
                                         *_conv_block("conv2", 16, 5, 0),
                                         *_dense_stack([120, 84], out_dim)], backend)


@MODELS.register("femnist_cnn", {"hidden": Field("int", 2048, lo=1, doc="fully connected width"),
                                 "backend": _BACKEND})
def femnist_cnn(input_shape: tuple, out_dim: int, backend: str, hidden: int) -> BatchedModel:
    """FEMNIST CNN (DPFL): conv32(5, pad 2)-pool-conv64(5, pad 2)-pool-fc hidden-fc."""
    return SequentialModel(input_shape, [View(image=True), *_conv_block("conv1", 32, 5, 2),
                                         *_conv_block("conv2", 64, 5, 2),
                                         *_dense_stack([hidden], out_dim)], backend)


@MODELS.register("cnn", {"channels": Field("int", 16, lo=1, doc="3x3 convolution channels"),
                         "hidden": Field("list", [], item="int", lo=1,
                                         doc="hidden fully connected widths after the pooling"),
                         "backend": _BACKEND})
def cnn(input_shape: tuple, out_dim: int, backend: str, channels: int,
        hidden: list[int]) -> BatchedModel:
    """Small CNN (e.g. 8x8 digits): conv3x3(pad 1)-ReLU-pool2-[fc-ReLU...]-fc."""
    return SequentialModel(input_shape, [View(image=True), *_conv_block("conv1", channels, 3, 1),
                                         *_dense_stack(hidden, out_dim)], backend)
