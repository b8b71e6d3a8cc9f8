"""The batched-model contract and the sequential network that implements most of the zoo.

A :class:`BatchedModel` computes M clients' outputs in one call from stacked parameters
``{name: Tensor[M, *shape]}``. :class:`SequentialModel` is a chain of :class:`Layer` objects, each
knowing its single-client functional form (``single``: used by ``vmap`` and by the ``loop``
trunk), its all-clients form (``batched``) and its ``torch.nn`` twin (``module``, used only by
tests as the independent reference).
"""
from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Params = dict[str, Tensor]


class BatchedModel:
    """N per-client copies of one architecture, evaluated in one call.

    Subclasses set ``shapes`` (per-client parameter shapes, ordered), ``init_bound`` (uniform
    init half-width per parameter, 0 = zeros), ``out_dim``, ``flops_per_sample`` and ``backend``.
    """

    shapes: dict[str, tuple]
    init_bound: dict[str, float]
    out_dim: int
    flops_per_sample: float
    backend: str

    @property
    def num_params(self) -> int:
        """Parameters of one client's model."""
        return sum(math.prod(s) for s in self.shapes.values())

    def init(self, n: int, gen: torch.Generator, device: str | torch.device) -> Params:
        """PyTorch-default init (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), independent per client;
        parameters with bound 0 start at zero.

        Draws happen on ``gen``'s device (so results do not depend on ``device``), in
        ``shapes`` order, then move to ``device``.
        """
        out = {}
        for name, shape in self.shapes.items():
            bound = self.init_bound[name]
            if bound == 0:
                out[name] = torch.zeros((n, *shape), device=device)
                continue
            u = torch.rand((n, *shape), generator=gen, device=gen.device)
            out[name] = ((2.0 * u - 1.0) * bound).to(device)
        return out

    def forward(self, params: Params, x: Tensor) -> Tensor:
        """``x: [M, B, *input_shape]`` -> ``[M, B, out_dim]``."""
        raise NotImplementedError

    def reference(self, params: Params) -> nn.Module:
        """A plain ``nn.Module`` with this architecture and one client's weights (tests only)."""
        raise NotImplementedError


class Layer:
    """One stage of a per-client network; ``bind`` fixes the input shape, returns the output's."""

    name: str = ""
    params: dict[str, tuple] = {}
    fan_in: int = 1
    flops: float = 0.0

    def bind(self, shape: tuple) -> tuple:
        return shape

    def single(self, p: Params, x: Tensor) -> Tensor:
        """One client: ``x: [B, ...]``."""
        raise NotImplementedError

    def batched(self, p: Params, x: Tensor) -> Tensor:
        """All clients: ``x: [M, B, ...]``; elementwise layers reuse ``single``."""
        return self.single(p, x)

    def module(self) -> nn.Module:
        raise NotImplementedError


class _Reshape(nn.Module):
    def __init__(self, shape: tuple):
        super().__init__()
        self.shape = shape

    def forward(self, x: Tensor) -> Tensor:
        return x.reshape(x.shape[0], *self.shape)


class View(Layer):
    """Reshape each sample: to a flat vector (``image=False``) or to ``(C, H, W)`` (``image=True``;
    a 2-D ``(H, W)`` input gets one channel)."""

    def __init__(self, image: bool):
        self.image = image

    def bind(self, shape: tuple) -> tuple:
        if not self.image:
            self.target = (math.prod(shape),)
        elif len(shape) in (2, 3):
            self.target = tuple(shape) if len(shape) == 3 else (1, *shape)
        else:
            raise ValueError(f"a convolutional model needs (C, H, W) or (H, W) inputs, got {shape}")
        return self.target

    def single(self, p: Params, x: Tensor) -> Tensor:
        return x.reshape(x.shape[0], *self.target)

    def batched(self, p: Params, x: Tensor) -> Tensor:
        return x.reshape(x.shape[0], x.shape[1], *self.target)

    def module(self) -> nn.Module:
        return _Reshape(self.target)


class ReLU(Layer):
    def single(self, p: Params, x: Tensor) -> Tensor:
        return F.relu(x)

    def module(self) -> nn.Module:
        return nn.ReLU()


class MaxPool(Layer):
    """2x2 max pooling, stride 2."""

    def bind(self, shape: tuple) -> tuple:
        c, h, w = shape
        if h < 2 or w < 2:
            raise ValueError(f"max-pool 2x2 needs a map of at least 2x2, got {h}x{w}")
        return (c, h // 2, w // 2)

    def single(self, p: Params, x: Tensor) -> Tensor:
        return F.max_pool2d(x, 2)

    def batched(self, p: Params, x: Tensor) -> Tensor:
        return F.max_pool2d(x.flatten(0, 1), 2).unflatten(0, x.shape[:2])

    def module(self) -> nn.Module:
        return nn.MaxPool2d(2)


class Dense(Layer):
    """Fully connected layer; batched as one ``baddbmm`` over the client dimension."""

    def __init__(self, name: str, out: int):
        self.name, self.out = name, out

    def bind(self, shape: tuple) -> tuple:
        (self.fan_in,) = shape
        self.params = {f"{self.name}.weight": (self.out, self.fan_in),
                       f"{self.name}.bias": (self.out,)}
        self.flops = 2.0 * self.fan_in * self.out
        return (self.out,)

    def single(self, p: Params, x: Tensor) -> Tensor:
        return F.linear(x, p[f"{self.name}.weight"], p[f"{self.name}.bias"])

    def batched(self, p: Params, x: Tensor) -> Tensor:
        # (W x^T + b)^T rather than x W^T + b: the weight gradient then comes out contiguous
        # (no copies when gradients are flattened), about 1.4x faster per MLP step on CPU.
        w, b = p[f"{self.name}.weight"], p[f"{self.name}.bias"]
        return torch.baddbmm(b.unsqueeze(2), w, x.transpose(1, 2)).transpose(1, 2)

    def module(self) -> nn.Module:
        return nn.Linear(self.fan_in, self.out)


class Conv(Layer):
    """2-D convolution (stride 1); batched as one grouped ``conv2d`` with the clients as groups."""

    def __init__(self, name: str, out: int, kernel: int, padding: int = 0):
        self.name, self.out, self.kernel, self.padding = name, out, kernel, padding

    def bind(self, shape: tuple) -> tuple:
        self.cin, h, w = shape
        k, pad = self.kernel, self.padding
        ho, wo = h + 2 * pad - k + 1, w + 2 * pad - k + 1
        if ho < 1 or wo < 1:
            raise ValueError(f"a {k}x{k} convolution (padding {pad}) needs a map of at least "
                             f"{k - 2 * pad}x{k - 2 * pad}, got {h}x{w}")
        self.fan_in = self.cin * k * k
        self.params = {f"{self.name}.weight": (self.out, self.cin, k, k),
                       f"{self.name}.bias": (self.out,)}
        self.flops = 2.0 * self.fan_in * self.out * ho * wo
        return (self.out, ho, wo)

    def single(self, p: Params, x: Tensor) -> Tensor:
        return F.conv2d(x, p[f"{self.name}.weight"], p[f"{self.name}.bias"], padding=self.padding)

    def batched(self, p: Params, x: Tensor) -> Tensor:
        w, b = p[f"{self.name}.weight"], p[f"{self.name}.bias"]
        m, bsz = x.shape[:2]
        xg = x.transpose(0, 1).reshape(bsz, m * self.cin, *x.shape[3:])
        y = F.conv2d(xg, w.reshape(m * self.out, *w.shape[2:]), b.reshape(-1),
                     padding=self.padding, groups=m)
        return y.reshape(bsz, m, self.out, *y.shape[2:]).transpose(0, 1)

    def module(self) -> nn.Module:
        return nn.Conv2d(self.cin, self.out, self.kernel, padding=self.padding)


class SequentialModel(BatchedModel):
    """A chain of layers bound to ``input_shape``.

    ``backend``: ``bmm`` (no convolutions: every layer batched), ``loop`` (the convolutional
    trunk, up to the first dense layer, runs client by client, which keeps each client's feature
    maps cache-resident on CPU; the dense head is batched), ``grouped`` (grouped convolutions)
    or ``vmap`` (``torch.func.vmap`` over the single-client forward).
    """

    def __init__(self, input_shape: tuple, layers: list[Layer], backend: str):
        shape = tuple(input_shape)
        for layer in layers:
            shape = layer.bind(shape)
        (self.out_dim,) = shape
        self.layers = layers
        self.backend = backend
        self.shapes = {k: v for layer in layers for k, v in layer.params.items()}
        self.init_bound = {k: 1.0 / math.sqrt(layer.fan_in)
                           for layer in layers for k in layer.params}
        self.flops_per_sample = float(sum(layer.flops for layer in layers))
        has_conv = any(isinstance(layer, Conv) for layer in layers)
        self._trunk = next(i for i, layer in enumerate(layers)
                           if isinstance(layer, Dense)) if has_conv else 0
        self._trunk_keys = [k for layer in layers[:self._trunk] for k in layer.params]

    def _single(self, params: Params, x: Tensor, stop: int | None = None) -> Tensor:
        for layer in self.layers[:stop]:
            x = layer.single(params, x)
        return x

    def forward(self, params: Params, x: Tensor) -> Tensor:
        if self.backend == "vmap":
            return torch.func.vmap(self._single)(params, x)
        start = self._trunk if self.backend == "loop" else 0
        if start:  # unbind, not x[i]: indexing's backward zero-fills [M, ...] per client
            keys = self._trunk_keys
            rows = zip(x.unbind(0), *(params[k].unbind(0) for k in keys))
            x = torch.stack([self._single(dict(zip(keys, ps)), xi, start) for xi, *ps in rows])
        for layer in self.layers[start:]:
            x = layer.batched(params, x)
        return x

    def reference(self, params: Params) -> nn.Module:
        net = nn.Sequential(OrderedDict(
            (layer.name or f"op{i}", layer.module()) for i, layer in enumerate(self.layers)))
        net.load_state_dict({k: v.detach().clone() for k, v in params.items()})
        return net
