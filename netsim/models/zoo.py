"""The model zoo: linear, MLP, the mean vector of the quadratic task, the small CNNs of the
DPFL paper (LeNet-5 for CIFAR, the FEMNIST CNN), a tiny CNN for 8x8 digits, a small 1-D CNN for
signals (MNIST-1D), and the batch-normed vision models of CoBo (ResNet-9) and PDBO (MobileNet-v2
plus a linear layer).

Every builder is ``fn(input_shape, out_dim, backend, **params) -> BatchedModel`` where
``backend`` is already resolved to ``loop``, ``vmap`` or ``grouped`` (dense models ignore it).
"""
from __future__ import annotations

from torch import Tensor, nn

from netsim.models.base import (BatchedModel, BatchNorm, Chain, Conv, Conv1d, Dense, GlobalPool,
                                Layer, MaxPool, Params, ReLU, ReLU6, Residual, SequentialModel,
                                SignalView, View)
from netsim.errors import ConfigError
from netsim.schema.registry import Registry
from netsim.schema import Field

MODELS = Registry("model")

BACKENDS = ("auto", "loop", "vmap", "grouped")
_BACKEND = Field("str", "auto", choices=BACKENDS,
                 doc="how convolutions batch over clients; auto = grouped on CUDA, loop on CPU")
_WIDTH = Field("float", 1.0, lo=1e-3, doc="channel width multiplier (1 = the paper's model)")


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


@MODELS.register("lenet5", {
    "channels": Field("list", [6, 16], item="int", lo=1, doc="the two 5x5 convolutions' channels"),
    "hidden": Field("list", [120, 84], item="int", lo=1, doc="fully connected widths"),
    "backend": _BACKEND})
def lenet5(input_shape: tuple, out_dim: int, backend: str, channels: list[int],
           hidden: list[int]) -> BatchedModel:
    """LeNet-5 (DPFL's CNNCifar, pFedMe's CIFAR CNN): conv6(5)-pool-conv16(5)-pool-fc120-fc84-fc;
    inputs >= 16x16. Other widths give DPFL's CNNFemnist (channels [4, 12], hidden [120, 100])
    and FedEM's EMNIST CNN used by PDBO (channels [32, 64], hidden [2048])."""
    if len(channels) != 2:
        raise ConfigError("model.channels", channels, "two ints (the two convolutions' channels)")
    return SequentialModel(input_shape, [View(image=True), *_conv_block("conv1", channels[0], 5, 0),
                                         *_conv_block("conv2", channels[1], 5, 0),
                                         *_dense_stack(hidden, out_dim)], backend)


@MODELS.register("femnist_cnn", {"hidden": Field("int", 2048, lo=1, doc="fully connected width"),
                                 "backend": _BACKEND})
def femnist_cnn(input_shape: tuple, out_dim: int, backend: str, hidden: int) -> BatchedModel:
    """LEAF's FEMNIST CNN: conv32(5, pad 2)-pool-conv64(5, pad 2)-pool-fc hidden-fc."""
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


@MODELS.register("cnn1d", {
    "channels": Field("list", [32, 32], item="int", lo=1,
                      doc="channels of the 1-D convolutions, one convolution (then ReLU) each"),
    "kernel": Field("int", 5, lo=1, doc="kernel length of every convolution ('same' padding "
                    "kernel // 2)"),
    "stride": Field("int", 1, lo=1, doc="stride of every convolution"),
    "pool": Field("str", "max", choices=("max", "avg", "flatten"),
                  doc="how the last feature map reaches the dense head: global max or average "
                      "pooling over the length (translation-invariant), or flatten (keeps "
                      "positions)"),
    "hidden": Field("list", [], item="int", lo=1,
                    doc="hidden fully connected widths before the output layer"),
    "backend": _BACKEND})
def cnn1d(input_shape: tuple, out_dim: int, backend: str, channels: list[int], kernel: int,
          stride: int, pool: str, hidden: list[int]) -> BatchedModel:
    """Small 1-D CNN for signals (MNIST-1D): conv1d(5)-ReLU x2, global max pool, fc.

    Inputs (C, L) or (L,): [conv1d(kernel, pad kernel // 2, stride)-ReLU] per entry of
    ``channels``, global max pooling (or average, or flatten), [fc-ReLU...]-fc. The default has
    5,674 parameters for 10 classes."""
    if not channels:
        raise ConfigError("model.channels", channels, "a non-empty list of ints (one per "
                          "convolution)")
    layers: list[Layer] = [SignalView()]
    for i, width in enumerate(channels):
        layers += [Conv1d(f"conv{i + 1}", width, kernel, kernel // 2, stride), ReLU()]
    if pool != "flatten":
        layers.append(GlobalPool(pool))
    return SequentialModel(input_shape, layers + _dense_stack(hidden, out_dim), backend)


def _conv_bn(conv: str, bn: str, out: int, kernel: int = 3, stride: int = 1, groups: int = 1,
             act: type[Layer] | None = ReLU) -> list[Layer]:
    """Conv (no bias, 'same' padding) -> BatchNorm -> activation (none if ``act`` is None)."""
    layers = [Conv(conv, out, kernel, kernel // 2, stride, groups, bias=False), BatchNorm(bn)]
    return layers + ([act()] if act else [])


def _res9_block(name: str, channels: int) -> Residual:
    return Residual(name, [*_conv_bn(f"{name}.conv1", f"{name}.bn1", channels),
                           *_conv_bn(f"{name}.conv2", f"{name}.bn2", channels)])


@MODELS.register("resnet9", {"width": _WIDTH, "backend": _BACKEND})
def resnet9(input_shape: tuple, out_dim: int, backend: str, width: float) -> BatchedModel:
    """ResNet-9 (CoBo; DAWNBench): conv64 - conv128-pool-res(128, 128) - conv256-pool -
    conv512-pool-res(512, 512) - global max pool - fc; conv = 3x3 (no bias)-BN-ReLU; inputs
    >= 8x8."""
    c1, c2, c3, c4 = (max(1, round(c * width)) for c in (64, 128, 256, 512))
    return SequentialModel(input_shape, [
        View(image=True), *_conv_bn("conv1", "bn1", c1),
        *_conv_bn("conv2", "bn2", c2), MaxPool(), _res9_block("res1", c2),
        *_conv_bn("conv3", "bn3", c3), MaxPool(),
        *_conv_bn("conv4", "bn4", c4), MaxPool(), _res9_block("res2", c4),
        GlobalPool("max"), Dense("fc", out_dim)], backend)


# torchvision's MobileNetV2 inverted-residual settings: expansion t, channels c, repeats n, stride s
_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                 (6, 160, 3, 2), (6, 320, 1, 1))


def _divisible(v: float, divisor: int = 8) -> int:
    """torchvision's ``_make_divisible``: round to a multiple of 8, never down by over 10%."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def _inverted_residual(name: str, cin: int, out: int, stride: int, t: int) -> Layer:
    """1x1 expand (t != 1) - 3x3 depthwise (stride) - 1x1 project (no activation), with the
    input added when the shape is kept (torchvision's ``InvertedResidual``)."""
    hidden = round(cin * t)
    layers = (_conv_bn(f"{name}.expand", f"{name}.expand_bn", hidden, 1, act=ReLU6)
              if t != 1 else [])
    layers += _conv_bn(f"{name}.depthwise", f"{name}.depthwise_bn", hidden, 3, stride,
                       groups=hidden, act=ReLU6)
    layers += _conv_bn(f"{name}.project", f"{name}.project_bn", out, 1, act=None)
    return (Residual if stride == 1 and cin == out else Chain)(name, layers)


@MODELS.register("mobilenet_v2", {
    "width": _WIDTH,
    "hidden": Field("int", 1000, lo=1, doc="output width of torchvision's classifier, which "
                    "PDBO's extra linear layer maps to the classes"),
    "backend": _BACKEND})
def mobilenet_v2(input_shape: tuple, out_dim: int, backend: str, width: float,
                 hidden: int) -> BatchedModel:
    """MobileNet-v2 (PDBO, CIFAR-10): torchvision's architecture (stride-2 stem, 17 inverted
    residual blocks, 1x1 conv to 1280, global average pool, linear to ``hidden``) plus a linear
    layer ``hidden`` -> classes; no dropout. Five stride-2 stages: 32x32 inputs end as 1x1 maps."""
    cin = _divisible(32 * width)
    blocks: list[Layer] = []
    for t, c, n, s in _MOBILENET_V2:
        out = _divisible(c * width)
        for j in range(n):
            blocks.append(_inverted_residual(f"block{len(blocks) + 1}", cin, out,
                                             s if j == 0 else 1, t))
            cin = out
    last = _divisible(1280 * max(1.0, width))
    return SequentialModel(input_shape, [
        View(image=True), *_conv_bn("stem", "stem_bn", _divisible(32 * width), 3, 2, act=ReLU6),
        *blocks, *_conv_bn("head", "head_bn", last, 1, act=ReLU6), GlobalPool("avg"),
        Dense("fc1", hidden), Dense("fc2", out_dim)], backend)
