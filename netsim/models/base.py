"""The batched-model contract and the sequential network that implements most of the zoo.

A :class:`BatchedModel` computes M clients' outputs in one call from stacked parameters
``{name: Tensor[M, *shape]}``. :class:`SequentialModel` is a chain of :class:`Layer` objects, each
knowing its single-client functional form (``single``: used by ``vmap`` and by the ``loop``
trunk), its all-clients form (``batched``) and its ``torch.nn`` twin (``module``, used only by
tests as the independent reference).

Batch normalisation (:class:`BatchNorm`) adds per-client *buffers*, running statistics that are
not parameters: ``forward(params, x)`` is train mode (batch statistics, a pure function of the
parameters), ``forward(params, x, buffers=...)`` eval mode (running statistics) and
``forward(params, x, stats={})`` train mode that also records each running statistic's batch
value, from which the caller (``ClientBank.sgd_step``) updates the buffers.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import Tensor, nn

Params = dict[str, Tensor]
Stats = dict[str, Tensor]

BN_EPS = 1e-5
BN_MOMENTUM = 0.1  # running = (1 - m) * running + m * batch value (torch.nn.BatchNorm2d)


class BatchedModel:
    """N per-client copies of one architecture, evaluated in one call.

    Subclasses set ``shapes`` (per-client parameter shapes, ordered), ``init_bound`` (uniform
    init half-width per parameter, 0 = zeros), ``out_dim``, ``flops_per_sample`` and ``backend``.
    Models with batch normalisation also set ``init_const`` (parameters starting at a constant),
    ``buffers`` (per-client running-statistic shapes, ordered), ``buffer_init`` (their initial
    values) and ``counters`` (the names of the ``num_batches_tracked`` counters).
    """

    shapes: dict[str, tuple]
    init_bound: dict[str, float]
    out_dim: int
    flops_per_sample: float
    backend: str
    init_const: dict[str, float] = {}
    buffers: dict[str, tuple] = {}
    buffer_init: dict[str, float] = {}
    counters: tuple[str, ...] = ()
    buffer_momentum: float = BN_MOMENTUM

    @property
    def num_params(self) -> int:
        """Parameters of one client's model."""
        return sum(math.prod(s) for s in self.shapes.values())

    def init(self, n: int, gen: torch.Generator, device: str | torch.device) -> Params:
        """PyTorch-default init (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), independent per client;
        parameters with bound 0 start at zero, those in ``init_const`` at their constant.

        Draws happen on ``gen``'s device (so results do not depend on ``device``), in
        ``shapes`` order, then move to ``device``.
        """
        out = {}
        for name, shape in self.shapes.items():
            if name in self.init_const:
                out[name] = torch.full((n, *shape), self.init_const[name], device=device)
                continue
            bound = self.init_bound[name]
            if bound == 0:
                out[name] = torch.zeros((n, *shape), device=device)
                continue
            u = torch.rand((n, *shape), generator=gen, device=gen.device)
            out[name] = ((2.0 * u - 1.0) * bound).to(device)
        return out

    def forward(self, params: Params, x: Tensor) -> Tensor:
        """``x: [M, B, *input_shape]`` -> ``[M, B, out_dim]``.

        Models with ``buffers`` also take ``buffers={name: [M, *shape]}`` (eval mode: running
        statistics) and ``stats`` (a dict that receives the batch value ``[M, *shape]`` of each
        running statistic: per-channel mean and unbiased variance); models without take neither.
        """
        raise NotImplementedError

    def reference(self, params: Params) -> nn.Module:
        """A plain ``nn.Module`` with this architecture and one client's weights (tests only);
        models with buffers also load the running statistics and counters found in ``params``."""
        raise NotImplementedError


class Layer:
    """One stage of a per-client network; ``bind`` fixes the input shape, returns the output's.

    Layers with ``buffers`` (batch normalisation, and chains holding it) read their running
    statistics from ``p`` when present there (eval mode) and take a third argument ``stats``
    (a dict, or None) into which train mode records the batch values.
    """

    name: str = ""
    params: dict[str, tuple] = {}
    fan_in: int = 1
    flops: float = 0.0
    const: dict[str, float] = {}
    buffers: dict[str, tuple] = {}
    buffer_init: dict[str, float] = {}
    counters: tuple[str, ...] = ()

    @property
    def init_bound(self) -> dict[str, float]:
        """Uniform init half-width per parameter: PyTorch's 1/sqrt(fan_in)."""
        return {k: 1.0 / math.sqrt(self.fan_in) for k in self.params}

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


def run(layers: list[Layer], p: Params, x: Tensor, stats: Stats | None = None,
        batched: bool = False) -> Tensor:
    """Apply ``layers`` in order (their ``batched`` forms if ``batched``); ``stats`` goes to the
    layers with buffers."""
    for layer in layers:
        f = layer.batched if batched else layer.single
        x = f(p, x) if stats is None or not layer.buffers else f(p, x, stats)
    return x


def sequential(layers: list[Layer], cls: type = nn.Sequential) -> nn.Sequential:
    """The ``torch.nn`` twin of a chain; a submodule is named by the last part of its layer's
    dotted name (``op<i>`` for unnamed layers), so state-dict keys equal parameter names."""
    return cls(OrderedDict((layer.name.rsplit(".", 1)[-1] or f"op{i}", layer.module())
                           for i, layer in enumerate(layers)))


def _to_groups(x: Tensor) -> Tensor:
    """``[M, B, C, ...]`` -> ``[B, M * C, ...]``: clients as channel groups."""
    m, bsz = x.shape[:2]
    return x.transpose(0, 1).reshape(bsz, m * x.shape[2], *x.shape[3:])


def _from_groups(y: Tensor, m: int) -> Tensor:
    """Inverse of :func:`_to_groups`."""
    return y.reshape(y.shape[0], m, y.shape[1] // m, *y.shape[2:]).transpose(0, 1)


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


class SignalView(View):
    """Reshape each sample to a 1-D signal ``(C, L)`` for :class:`Conv1d`; an ``(L,)`` input
    gets one channel."""

    def __init__(self):
        self.image = True

    def bind(self, shape: tuple) -> tuple:
        if len(shape) not in (1, 2):
            raise ValueError(f"a 1-D convolutional model needs (C, L) or (L,) inputs, got {shape}")
        self.target = tuple(shape) if len(shape) == 2 else (1, *shape)
        return self.target


class ReLU(Layer):
    def single(self, p: Params, x: Tensor) -> Tensor:
        return F.relu(x)

    def module(self) -> nn.Module:
        return nn.ReLU()


class ReLU6(Layer):
    """min(max(x, 0), 6) (MobileNet-v2)."""

    def single(self, p: Params, x: Tensor) -> Tensor:
        return F.relu6(x)

    def module(self) -> nn.Module:
        return nn.ReLU6()


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


class GlobalPool(Layer):
    """Global max (``max``, ResNet-9) or average (``avg``, MobileNet-v2) pooling of each channel
    to one value: ``(C, H, W)`` or ``(C, L)`` (1-D signals) -> ``(C,)``."""

    def __init__(self, kind: str):
        self.kind = kind

    def bind(self, shape: tuple) -> tuple:
        if len(shape) not in (2, 3):
            raise ValueError(f"global pooling needs (C, H, W) or (C, L) maps, got {shape}")
        self.dims = tuple(range(1 - len(shape), 0))
        return (shape[0],)

    def single(self, p: Params, x: Tensor) -> Tensor:
        return x.amax(self.dims) if self.kind == "max" else x.mean(self.dims)

    def module(self) -> nn.Module:
        if len(self.dims) == 1:
            pool = nn.AdaptiveMaxPool1d(1) if self.kind == "max" else nn.AdaptiveAvgPool1d(1)
        else:
            pool = nn.AdaptiveMaxPool2d(1) if self.kind == "max" else nn.AdaptiveAvgPool2d(1)
        return nn.Sequential(pool, nn.Flatten())


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
    """2-D convolution; ``groups`` > 1 splits the channels (``groups`` = channels: depthwise);
    batched as one grouped ``conv2d`` with the clients as groups."""

    dims = 2                                     # spatial dimensions: maps (C, H, W)

    def __init__(self, name: str, out: int, kernel: int, padding: int = 0, stride: int = 1,
                 groups: int = 1, bias: bool = True):
        self.name, self.out, self.kernel, self.padding = name, out, kernel, padding
        self.stride, self.groups, self.bias = stride, groups, bias

    def _conv(self, x: Tensor, w: Tensor, b: Tensor | None, groups: int) -> Tensor:
        conv = F.conv2d if self.dims == 2 else F.conv1d
        return conv(x, w, b, self.stride, self.padding, 1, groups)

    def bind(self, shape: tuple) -> tuple:
        self.cin, *size = shape
        k, pad, s, g = self.kernel, self.padding, self.stride, self.groups
        if len(size) != self.dims:
            raise ValueError(f"a {self.dims}-D convolution needs maps of {self.dims + 1} "
                             f"dimensions (channels first), got {tuple(shape)}")
        if any(n + 2 * pad < k for n in size):
            raise ValueError(f"a {'x'.join([str(k)] * self.dims)} convolution (padding {pad}) "
                             f"needs a map of at least {'x'.join([str(k - 2 * pad)] * self.dims)}"
                             f", got {'x'.join(map(str, size))}")
        if self.cin % g or self.out % g:
            raise ValueError(f"{g} groups must divide the {self.cin} input and {self.out} "
                             "output channels")
        out_size = tuple((n + 2 * pad - k) // s + 1 for n in size)
        self.fan_in = self.cin // g * k ** self.dims
        self.params = {f"{self.name}.weight": (self.out, self.cin // g, *(k,) * self.dims)}
        if self.bias:
            self.params[f"{self.name}.bias"] = (self.out,)
        self.flops = 2.0 * self.fan_in * self.out * math.prod(out_size)
        return (self.out, *out_size)

    def _bias(self, p: Params) -> Tensor | None:
        return p[f"{self.name}.bias"] if self.bias else None

    def single(self, p: Params, x: Tensor) -> Tensor:
        return self._conv(x, p[f"{self.name}.weight"], self._bias(p), self.groups)

    def batched(self, p: Params, x: Tensor) -> Tensor:
        w, b, m = p[f"{self.name}.weight"], self._bias(p), x.shape[0]
        y = self._conv(_to_groups(x), w.reshape(m * self.out, *w.shape[2:]),
                       None if b is None else b.reshape(-1), m * self.groups)
        return _from_groups(y, m)

    def module(self) -> nn.Module:
        conv = nn.Conv2d if self.dims == 2 else nn.Conv1d
        return conv(self.cin, self.out, self.kernel, self.stride, self.padding,
                    groups=self.groups, bias=self.bias)


class Conv1d(Conv):
    """1-D convolution over signals ``(C, L)`` (same arguments as :class:`Conv`); batched as one
    grouped ``conv1d`` with the clients as groups."""

    dims = 1


class BatchNorm(Layer):
    """``torch.nn.BatchNorm2d`` (eps 1e-5, momentum 0.1): affine weight (init 1) and bias (init 0)
    are parameters; running mean (init 0) and variance (init 1) are per-client buffers, and
    ``num_batches_tracked`` a per-client counter. Train mode normalises with the batch
    statistics over (B, H, W) of each client; eval mode with the running ones."""

    def __init__(self, name: str):
        self.name = name

    def bind(self, shape: tuple) -> tuple:
        c = shape[0]
        self.channels = c
        w, b = f"{self.name}.weight", f"{self.name}.bias"
        self.mean, self.var = f"{self.name}.running_mean", f"{self.name}.running_var"
        self.params, self.const = {w: (c,), b: (c,)}, {w: 1.0, b: 0.0}
        self.buffers = {self.mean: (c,), self.var: (c,)}
        self.buffer_init = {self.mean: 0.0, self.var: 1.0}
        self.counters = (f"{self.name}.num_batches_tracked",)
        self.flops = 2.0 * math.prod(shape)
        return shape

    def _normalise(self, p: Params, x: Tensor, stats: Stats | None = None) -> Tensor:
        """``x`` holds each client's channels in dim 1 (one client, or clients as groups).
        ``stats``: record the batch's per-channel mean and unbiased variance, as
        ``torch.nn.BatchNorm2d`` computes them for its running statistics (the kernel's own, in
        the same pass: momentum 1 into fresh buffers, which then hold exactly the batch's)."""
        w, b = p[f"{self.name}.weight"].reshape(-1), p[f"{self.name}.bias"].reshape(-1)
        if self.mean in p:
            return F.batch_norm(x, p[self.mean].reshape(-1), p[self.var].reshape(-1), w, b,
                                False, 0.0, BN_EPS)
        if stats is None:
            return F.batch_norm(x, None, None, w, b, True, 0.0, BN_EPS)
        mean, var = x.new_zeros(x.shape[1]), x.new_ones(x.shape[1])
        out = F.batch_norm(x, mean, var, w, b, True, 1.0, BN_EPS)
        stats[self.mean], stats[self.var] = mean, var
        return out

    def single(self, p: Params, x: Tensor, stats: Stats | None = None) -> Tensor:
        if stats is not None and torch._C._functorch.is_batchedtensor(x):
            # under vmap, where buffers cannot be written in place: a separate pass
            stats[self.var], stats[self.mean] = torch.var_mean(x.detach(), dim=(0, 2, 3))
            return self._normalise(p, x)
        return self._normalise(p, x, stats)

    def batched(self, p: Params, x: Tensor, stats: Stats | None = None) -> Tensor:
        m = x.shape[0]
        found: Stats | None = None if stats is None else {}
        out = _from_groups(self._normalise(p, _to_groups(x), found), m)
        if stats is not None:
            stats.update({k: v.view(m, -1) for k, v in found.items()})
        return out

    def module(self) -> nn.Module:
        return nn.BatchNorm2d(self.channels, eps=BN_EPS, momentum=BN_MOMENTUM)


class Chain(Layer):
    """A named sub-chain of layers (e.g. one MobileNet-v2 block); its layers' names start with
    ``name + "."`` so that the ``torch.nn`` twin nests them under ``name``."""

    def __init__(self, name: str, layers: list[Layer]):
        self.name, self.layers = name, layers

    def bind(self, shape: tuple) -> tuple:
        for layer in self.layers:
            shape = layer.bind(shape)
        for attr in ("params", "const", "buffers", "buffer_init"):
            setattr(self, attr, {k: v for layer in self.layers
                                 for k, v in getattr(layer, attr).items()})
        self.counters = tuple(k for layer in self.layers for k in layer.counters)
        self.flops = float(sum(layer.flops for layer in self.layers))
        return shape

    @property
    def init_bound(self) -> dict[str, float]:
        return {k: v for layer in self.layers for k, v in layer.init_bound.items()}

    def single(self, p: Params, x: Tensor, stats: Stats | None = None) -> Tensor:
        return run(self.layers, p, x, stats)

    def batched(self, p: Params, x: Tensor, stats: Stats | None = None) -> Tensor:
        return run(self.layers, p, x, stats, batched=True)

    def module(self) -> nn.Module:
        return sequential(self.layers)


class _ResidualSequential(nn.Sequential):
    def forward(self, x: Tensor) -> Tensor:
        return x + super().forward(x)


class Residual(Chain):
    """``x + layers(x)`` (ResNet-9's residual blocks, MobileNet-v2's stride-1 blocks)."""

    def bind(self, shape: tuple) -> tuple:
        out = super().bind(shape)
        if out != tuple(shape):
            raise ValueError(f"residual block {self.name} maps {shape} to {out}")
        return out

    def single(self, p: Params, x: Tensor, stats: Stats | None = None) -> Tensor:
        return x + super().single(p, x, stats)

    def batched(self, p: Params, x: Tensor, stats: Stats | None = None) -> Tensor:
        return x + super().batched(p, x, stats)

    def module(self) -> nn.Module:
        return sequential(self.layers, _ResidualSequential)


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
        self.init_bound = {k: v for layer in layers for k, v in layer.init_bound.items()}
        self.init_const = {k: v for layer in layers for k, v in layer.const.items()}
        self.buffers = {k: v for layer in layers for k, v in layer.buffers.items()}
        self.buffer_init = {k: v for layer in layers for k, v in layer.buffer_init.items()}
        self.counters = tuple(k for layer in layers for k in layer.counters)
        self.flops_per_sample = float(sum(layer.flops for layer in layers))
        has_conv = any(isinstance(layer, Conv) for layer in layers)
        self._trunk = next(i for i, layer in enumerate(layers)
                           if isinstance(layer, Dense)) if has_conv else 0
        self._trunk_keys = [k for layer in layers[:self._trunk] for k in layer.params]
        self._trunk_buffers = [k for layer in layers[:self._trunk] for k in layer.buffers]

    def _single(self, params: Params, x: Tensor, stop: int | None = None,
                stats: Stats | None = None) -> Tensor:
        return run(self.layers[:stop], params, x, stats)

    def _tracked(self, params: Params, x: Tensor, stop: int | None = None) -> tuple[Tensor, Stats]:
        """``_single`` returning the batch statistics it records (for vmap and the loop)."""
        stats: Stats = {}
        return self._single(params, x, stop, stats), stats

    def forward(self, params: Params, x: Tensor, buffers: Params | None = None,
                stats: Stats | None = None) -> Tensor:
        keys = self._trunk_keys
        if buffers is not None:
            params, keys = {**params, **buffers}, keys + self._trunk_buffers
        if self.backend == "vmap":
            if stats is None:
                return torch.func.vmap(self._single)(params, x)
            x, found = torch.func.vmap(self._tracked)(params, x)
            stats.update(found)
            return x
        start = self._trunk if self.backend == "loop" else 0
        if start:  # unbind, not x[i]: indexing's backward zero-fills [M, ...] per client
            rows = zip(x.unbind(0), *(params[k].unbind(0) for k in keys))
            if stats is None:
                x = torch.stack([self._single(dict(zip(keys, ps)), xi, start)
                                 for xi, *ps in rows])
            else:
                outs, found = zip(*(self._tracked(dict(zip(keys, ps)), xi, start)
                                    for xi, *ps in rows))
                x = torch.stack(outs)
                stats.update({k: torch.stack([f[k] for f in found]) for k in found[0]})
        return run(self.layers[start:], params, x, stats, batched=True)

    def reference(self, params: Params) -> nn.Module:
        net = sequential(self.layers)
        missing, unexpected = net.load_state_dict(
            {k: v.detach().clone() for k, v in params.items()}, strict=False)
        absent = set(missing) - set(self.buffers) - set(self.counters)
        if absent or unexpected:
            raise KeyError(f"reference: missing {sorted(absent)}, unexpected {sorted(unexpected)}")
        return net
