"""ClientBank: the parameters of N clients stacked in one flat tensor, trained and evaluated in
batched calls (no Python loop over clients).

Differentiating through the loss (bilevel methods): :meth:`ClientBank.loss_fn` is a pure function
of the parameter rows, so torch.func composes with it. With ``rows = bank.flat[c]`` (``[M, d]``)::

    f = lambda r: bank.loss_fn(r, x, y, c).sum()      # clients are independent: sum = per-client
    g = torch.func.grad(f)(rows)                       # [M, d] per-client gradients
    _, hv = torch.func.jvp(torch.func.grad(f), (rows,), (v,))   # per-client Hessian @ v
    _, vjp = torch.func.vjp(torch.func.grad(f), rows)             # vjp(u) = Hessian @ u too

``bank.loss(x, y, c, flat=rows)`` with ``rows.requires_grad_()`` also works with plain autograd
(``create_graph=True`` for double backward).

Batch normalisation: models with ``buffers`` keep per-client running statistics in
``bank.running: Tensor[n, r]`` (the model's ``buffers`` in order, views by :meth:`buffers`) and
``bank.tracked: Tensor[n]`` (long: ``num_batches_tracked`` of every BN layer), apart from the
parameters. ``loss_fn``, ``loss`` and ``grad`` use batch statistics (train mode) and stay pure
functions of the rows; :meth:`sgd_step` updates the running statistics of the clients it steps
(``torch.nn.BatchNorm2d``: momentum 0.1, unbiased batch variance), and so do
:meth:`track_statistics` and :meth:`update_statistics` for steps written by hand; :meth:`evaluate` uses
them (eval mode). The buffers are local, as in FedBN: ``mix``, ``set_rows`` and algorithms that
copy a server model into clients move parameters only and leave each client's running
statistics as they are; ``copy`` and ``state_dict`` carry them.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from netsim.errors import ConfigError
from netsim.models.base import BatchedModel, Params
from netsim.util.device import resolve_device
from netsim.runtime.mixing import Matrix, mix
from netsim.runtime.rows import copy_rows
from netsim.runtime.scratch import Scratch
from netsim.runtime.sgd import SGD

TASKS = ("classification", "regression")
EVAL_MAX_ROWS = 16384  # client x sample rows per forward pass in evaluate (bounds memory)

Clients = Tensor | None


class ClientBank:
    """Parameters of ``n`` clients as ``flat: Tensor[n, d]`` (``dtype``, float32 by default) on
    ``device``.

    ``same_init``: all clients start from one draw (standard in FL); otherwise independent draws.
    ``loss_scale[n]`` multiplies each client's loss (default ones). ``clients`` arguments take a
    LongTensor of distinct client indices or a bool mask ``[n]``; ``None`` means all clients.
    A ``flat`` argument gives the ``[M, d]`` parameter rows to use for those clients instead of
    the bank's own.
    """

    def __init__(self, model: BatchedModel, n: int, device: str | torch.device,
                 gen: torch.Generator, task: str = "classification", same_init: bool = True,
                 loss_scale: Tensor | None = None, dtype: torch.dtype = torch.float32):
        if task not in TASKS:
            raise ConfigError("data.task", task, "one of " + ", ".join(TASKS))
        self.model, self.n, self.task = model, int(n), task
        self.device = resolve_device(device)
        self._slices, self.d = _layout(model.shapes)
        init = model.init(1 if same_init else self.n, gen, self.device)
        rows = torch.cat([init[k].reshape(init[k].shape[0], -1) for k in model.shapes], 1)
        self.flat = rows.to(dtype).expand(self.n, self.d).contiguous()
        self.running: Tensor | None = None  # BatchNorm running statistics [n, r]
        self.tracked: Tensor | None = None  # their num_batches_tracked [n]
        if model.buffers:
            self._buffer_slices, r = _layout(model.buffers)
            first = torch.cat([torch.full((math.prod(shape),), model.buffer_init[k], dtype=dtype)
                               for k, shape in model.buffers.items()])
            self._initial_running = first.to(self.device)
            self.running = self._initial_running.expand(self.n, r).contiguous()
            self.tracked = torch.zeros(self.n, dtype=torch.long, device=self.device)
        self.loss_scale = (torch.ones(self.n, dtype=dtype, device=self.device)
                           if loss_scale is None else
                           torch.as_tensor(loss_scale, dtype=dtype, device=self.device).clone())
        self._buf: Tensor | None = None  # momentum buffers [n, d], allocated on first use
        self._scratch = Scratch()  # sgd_step's gradient rows [n, d]

    @property
    def size_bytes(self) -> int:
        """Bytes of one client's model."""
        return self.flat.element_size() * self.d

    def params(self, flat: Tensor | None = None) -> Params:
        """``{name: Tensor[M, *shape]}`` views into ``flat`` (default: the bank's)."""
        rows = self.flat if flat is None else flat
        return _views(rows, self._slices)

    def buffers(self, clients: Clients = None) -> Params:
        """Running statistics ``{name: Tensor[M, *shape]}`` (views for all clients, else copies)
        and their ``num_batches_tracked`` counters ``[M]`` of the listed clients; ``{}`` for a
        model without batch normalisation."""
        if self.running is None:
            return {}
        idx = self._index(clients)
        rows, tracked = _select(self.running, idx), _select(self.tracked, idx)
        return {**_views(rows, self._buffer_slices),
                **{k: tracked for k in self.model.counters}}

    def _index(self, clients: Clients) -> Tensor | None:
        """Row indices of the listed clients; None for all clients in order (a mask of all
        True, or the indices 0..N-1), so that the step works on the bank in place instead of
        gathering and scattering every row."""
        if clients is None:
            return None
        clients = torch.as_tensor(clients, device=self.device)
        if clients.dtype == torch.bool:
            return None if bool(clients.all()) else clients.nonzero().squeeze(1)
        clients = clients.long()
        if clients.numel() == self.n and bool((clients[1:] > clients[:-1]).all()) \
                and int(clients[0]) == 0:
            return None
        return clients

    def _rows(self, idx: Tensor | None, flat: Tensor | None) -> Tensor:
        """``flat`` if given, else the bank's rows of ``idx`` (all: the bank itself, in place)."""
        return _select(self.flat, idx) if flat is None else flat

    def _sample_losses(self, out: Tensor, y: Tensor) -> Tensor:
        """Per-sample losses ``[M, B]`` of outputs ``[M, B, k]``."""
        if self.task == "classification":  # class dim 1: ~5x faster than flattening on CPU
            return F.cross_entropy(out.transpose(1, 2), y, reduction="none")
        if y.dim() == out.dim() - 1:
            y = y.unsqueeze(-1)
        return 0.5 * (out - y).pow(2).sum(-1)

    def loss_fn(self, flat_rows: Tensor, x: Tensor, y: Tensor, clients: Clients = None,
                stats: dict | None = None) -> Tensor:
        """Pure per-client mean loss ``[M]`` of parameter rows ``[M, d]`` on batches
        ``x[M, B, ...]``, ``y[M, B(, k)]`` (``clients`` only selects the loss scales). ``stats``
        (models with batch normalisation): a dict that receives each client's batch statistics,
        for :meth:`update_statistics` (inside torch.func, return it as the aux output)."""
        return self._loss_of(self.params(flat_rows), x, y, self._index(clients), stats)

    def _loss_of(self, params: Params, x: Tensor, y: Tensor, idx: Tensor | None,
                 stats: dict | None = None) -> Tensor:
        """``stats``: a dict receiving the batch statistics (models with buffers only)."""
        scale = _select(self.loss_scale, idx)
        out = (self.model.forward(params, x) if stats is None else
               self.model.forward(params, x, stats=stats))
        return self._sample_losses(out, y).mean(1) * scale

    def loss(self, x: Tensor, y: Tensor, clients: Clients = None,
             flat: Tensor | None = None) -> Tensor:
        """Per-client mean loss ``[M]``; differentiable w.r.t. ``flat`` if it requires grad."""
        idx = self._index(clients)
        return self.loss_fn(self._rows(idx, flat), x, y, idx)

    def grad(self, x: Tensor, y: Tensor, clients: Clients = None,
             flat: Tensor | None = None, track: bool = False,
             out: Tensor | None = None, stats: dict | None = None,
             concat: bool = True) -> tuple[Tensor, Tensor | list[Tensor]]:
        """``(loss[M], grad[M, d])`` from one backward pass of the summed per-client losses
        (taken w.r.t. the per-parameter views, then concatenated: cheaper than slicing a flat
        leaf, whose backward zero-fills and adds a ``[M, d]`` tensor per parameter), into ``out``
        (``[M, d]``) if given; not ``concat``: the gradient per parameter, ``[M, n_k]`` each.
        ``track`` (a training step written by hand): also update the clients' BatchNorm running
        statistics from this forward pass; ``stats`` (instead): a dict that receives them, for
        the caller to apply (:meth:`update_statistics`)."""
        idx = self._index(clients)
        update = track and self.running is not None
        if update:
            stats = {}
        loss, g = self._grad(x, y, idx, flat, stats, out, concat)
        if update:
            self.update_statistics(stats, idx)
        return loss, g

    def _grad(self, x: Tensor, y: Tensor, idx: Tensor | None, flat: Tensor | None,
              stats: dict | None = None, out: Tensor | None = None,
              concat: bool = True) -> tuple[Tensor, Tensor | list[Tensor]]:
        """The loss and its gradient ``[M, d]`` (``concat``) or per parameter, ``[M, n_k]``."""
        params = {k: v.detach().requires_grad_(True)
                  for k, v in self.params(self._rows(idx, flat)).items()}
        with torch.enable_grad():
            loss = self._loss_of(params, x, y, idx, stats)
            grads = [g.flatten(1) for g in torch.autograd.grad(loss.sum(), list(params.values()))]
        return loss.detach(), torch.cat(grads, 1, out=out) if concat else grads

    def sgd_step(self, x: Tensor, y: Tensor, opt: SGD, clients: Clients = None,
                 prox: tuple[float, Tensor] | None = None,
                 extra_grad: Tensor | None = None) -> Tensor:
        """One SGD step ``opt`` (:class:`netsim.runtime.sgd.SGD`) for the listed clients with
        ``torch.optim.SGD`` semantics; returns the pre-step loss ``[M]``.

        The direction is built as: data gradient, clipped per client to norm ``clip`` (as
        ``clip_grad_norm_``: factor ``min(1, clip / (norm + 1e-6))``); ``+ extra_grad[M, d]``;
        ``+ mu * (p - anchor[clients])`` for ``prox = (mu, anchor[N, d])``; ``+ weight_decay * p``;
        then momentum ``buf = momentum * buf + d_p`` (``buf = d_p`` on a client's first step),
        Nesterov ``d_p + momentum * buf``; ``p -= lr * step``. ``lr``: float or ``Tensor[M]``.
        Models with batch normalisation also update the clients' running statistics.

        All clients (``clients`` None, all True, or 0..N-1) update the bank in place; a subset is
        gathered and its step added back: slice by slice where its rows make at most
        :data:`MAX_RUNS` runs of consecutive rows of :data:`MIN_RUN_ROWS` rows or more on
        average, else with one ``index_add_`` (the same values).
        Without clipping, weight decay and Nesterov the direction and the step are built in
        autograd's gradients, parameter by parameter; otherwise the gradient goes into a work
        buffer kept between steps (:mod:`netsim.runtime.scratch`) and they are built in it.
        Both in place, the same values as out of place.
        """
        lr, momentum, weight_decay, clip = opt.lr, opt.momentum, opt.weight_decay, opt.clip
        idx = self._index(clients)
        p = self._rows(idx, None)
        rows = self.n if idx is None else len(idx)
        if clip is None and not weight_decay and not opt.nesterov:
            # parameter by parameter, as autograd gives the gradients (no [M, d] concatenation):
            # the same values, every remaining operation being elementwise without alpha
            loss, grads = self.grad(x, y, idx, flat=p, track=True, concat=False)
            pieces = [(g, slice(a, b)) for g, (a, b, _) in zip(grads, self._slices.values())]
        else:
            loss, g = self.grad(x, y, idx, flat=p, track=True,
                                out=self._scratch.like(self.flat)[:rows])
            if clip is not None:
                g.mul_((clip / (g.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0))
            pieces = [(g, slice(None))]
        anchor = None if prox is None else _select(prox[1], idx)
        runs = None if idx is None else _runs(idx)
        if runs is not None and len(idx) < MIN_RUN_ROWS * len(runs):
            runs = None                 # short runs: a call per slice costs more than it saves
        if isinstance(lr, Tensor):
            lr = lr.to(self.flat).view(-1, 1)
        for g, cols in pieces:
            if extra_grad is not None:
                g.add_(extra_grad[:, cols])
            if prox is not None:
                g.add_((p[:, cols] - anchor[:, cols]).mul_(prox[0]))
            if weight_decay:
                g.add_(p[:, cols], alpha=weight_decay)
            direction = (self._update_momentum(idx, g, momentum, opt.nesterov, cols) if momentum
                         else g)
            step = torch.mul(direction, lr, out=g)
            if idx is None:
                self.flat[:, cols].sub_(step)
            elif runs is not None:                  # long runs of rows: in place, by slices
                at = 0
                for a, b in runs:
                    self.flat[a:b, cols].sub_(step[at:at + b - a])
                    at += b - a
            else:                                   # = index_copy_ of p - step, one pass less
                self.flat[:, cols].index_add_(0, idx, step, alpha=-1)
        return loss

    def _update_momentum(self, idx: Tensor | None, d_p: Tensor, momentum: float,
                         nesterov: bool, cols: slice = slice(None)) -> Tensor:
        """``buf = momentum * buf + d_p`` (the buffers' columns ``cols``); buffers of clients
        without history are zero, which gives PyTorch's ``buf = d_p`` on the first step.
        Returns the step direction (Nesterov: built in ``d_p``, in place)."""
        if self._buf is None:
            self._buf = torch.zeros_like(self.flat)
        bufs = self._buf[:, cols]
        if idx is None:
            buf = bufs.mul_(momentum).add_(d_p)
        else:
            buf = bufs.index_select(0, idx).mul_(momentum).add_(d_p)
            copy_rows(bufs, idx, buf)
        return d_p.add_(buf, alpha=momentum) if nesterov else buf

    def track_statistics(self, x: Tensor, flat: Tensor | None = None,
                         clients: Clients = None) -> None:
        """Update the listed clients' BatchNorm running statistics from a training batch
        ``x[M, B, ...]`` at parameter rows ``flat`` (default: theirs), exactly as a training step
        does: for algorithms whose steps do not go through :meth:`sgd_step` (PDBO's SGP).
        No-op for models without batch normalisation."""
        if self.running is None:
            return
        idx = self._index(clients)
        stats: dict = {}
        with torch.no_grad():
            self.model.forward(self.params(self._rows(idx, flat)), x, stats=stats)
        self.update_statistics(stats, idx)

    def reset_statistics(self) -> None:
        """Running statistics back to their initial values (mean 0, var 1), counters to 0."""
        if self.running is not None:
            self.running.copy_(self._initial_running.expand_as(self.running))
            self.tracked.zero_()

    def update_statistics(self, stats: dict, clients: Clients = None) -> None:
        """``running = (1 - m) running + m batch`` for the listed clients at once, from batch
        statistics ``stats[buffer]: [M, ...]`` recorded by a forward pass; counters + 1."""
        idx = self._index(clients)
        batch = torch.cat([stats[k].flatten(1) for k in self.model.buffers], 1).to(self.running)
        m = self.model.buffer_momentum
        if idx is None:
            self.running.lerp_(batch, m)
            self.tracked += 1
        else:
            copy_rows(self.running, idx, self.running.index_select(0, idx).lerp_(batch, m))
            self.tracked.index_add_(0, idx, torch.ones_like(idx))

    def reset_momentum(self, clients: Clients = None) -> None:
        """Forget the momentum of the listed clients (all by default)."""
        idx = self._index(clients)
        if self._buf is not None:
            self._buf[slice(None) if idx is None else idx] = 0.0

    @torch.no_grad()
    def evaluate(self, x: Tensor, y: Tensor, mask: Tensor, clients: Clients = None,
                 flat: Tensor | None = None, chunk: int = 512) -> tuple[Tensor | None, Tensor]:
        """``(accuracy[M] or None for regression, loss[M])`` over padded splits ``x[M, max_n, ...]``
        with ``mask[M, max_n]`` marking real rows. Runs ``chunk`` samples per client at a time,
        and at most ``EVAL_MAX_ROWS`` client x sample rows per forward pass. The loss is scaled
        by ``loss_scale`` like :meth:`loss`. Models with batch normalisation run in eval mode with
        the running statistics of ``clients``, also when ``flat`` gives other parameter rows."""
        idx = self._index(clients)
        params = self.params(self._rows(idx, flat))
        buffers = self.buffers(idx)
        if buffers and len(self.tracked if idx is None else idx) != mask.shape[0]:
            raise ValueError("a model with batch normalisation evaluates with the running "
                             "statistics of `clients`: give one client per row")
        m, max_n = mask.shape
        step = max(1, min(chunk, max_n))
        block = max(1, EVAL_MAX_ROWS // step)
        loss_sum = torch.zeros(m, dtype=self.flat.dtype, device=self.device)
        correct = torch.zeros(m, dtype=self.flat.dtype, device=self.device)
        for s in range(0, max_n, step):
            for a in range(0, m, block):
                rows = slice(a, a + block)
                p = {k: v[rows] for k, v in params.items()}
                out = (self.model.forward(p, x[rows, s:s + step]) if not buffers else
                       self.model.forward(p, x[rows, s:s + step],
                                          buffers={k: v[rows] for k, v in buffers.items()}))
                yy, mk = y[rows, s:s + step], mask[rows, s:s + step]
                losses = self._sample_losses(out, yy)
                loss_sum[rows] += torch.where(mk, losses, torch.zeros_like(losses)).sum(1)
                if self.task == "classification":
                    correct[rows] += ((out.argmax(-1) == yy) & mk).sum(1)
        count = mask.sum(1).clamp(min=1)
        scale = _select(self.loss_scale, idx)
        acc = correct / count if self.task == "classification" else None
        return acc, loss_sum / count * scale

    def mix(self, W: Matrix) -> None:
        """``flat <- W @ flat`` in place (``W`` dense/sparse ``[N, N]``; see :func:`mixing.mix`);
        running statistics are not mixed."""
        self.flat.copy_(mix(W, self.flat))

    def set_rows(self, clients: Clients, values: Tensor) -> None:
        """Overwrite the listed clients' parameters with ``values`` (``[M, d]`` or ``[d]``);
        their running statistics stay (local, see the module docstring)."""
        idx = self._index(clients)
        values = values.to(self.flat)
        runs = _runs(idx) if idx is not None and values.dim() == 1 else None
        if idx is None:
            self.flat[:] = values
        elif runs is None:
            copy_rows(self.flat, idx, values.expand(len(idx), -1) if values.dim() == 1 else values)
        else:           # one model to few runs of rows: slice copies, ~3x faster than index_put
            for a, b in runs:
                self.flat[a:b] = values

    def copy(self) -> ClientBank:
        """An independent bank with copies of the parameters and momentum buffers."""
        new = copy.copy(self)
        new.flat = self.flat.clone()
        new.loss_scale = self.loss_scale.clone()
        new._buf = None if self._buf is None else self._buf.clone()
        if self.running is not None:
            new.running, new.tracked = self.running.clone(), self.tracked.clone()
        return new

    def state_dict(self) -> dict:
        """CPU copies of the parameters and momentum state (for checkpoints), and of the running
        statistics for models with batch normalisation."""
        state = {"flat": self.flat.cpu().clone(),
                 "momentum": None if self._buf is None else self._buf.cpu().clone()}
        if self.running is not None:
            state |= {"running": self.running.cpu().clone(), "tracked": self.tracked.cpu().clone()}
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        if tuple(state["flat"].shape) != (self.n, self.d):
            raise ValueError(f"checkpoint holds {tuple(state['flat'].shape)} parameters, "
                             f"bank has {(self.n, self.d)}")
        self.flat.copy_(state["flat"])
        self._buf = None if state["momentum"] is None else state["momentum"].to(self.flat).clone()
        if self.running is not None:
            self.running.copy_(state["running"])
            self.tracked.copy_(state["tracked"])


def _layout(shapes: dict[str, tuple]) -> tuple[dict[str, tuple[int, int, tuple]], int]:
    """Column ranges ``{name: (start, stop, shape)}`` of named tensors in a flat row, and its
    length."""
    slices, offset = {}, 0
    for name, shape in shapes.items():
        slices[name] = (offset, offset + math.prod(shape), tuple(shape))
        offset += math.prod(shape)
    return slices, offset


def _select(rows: Tensor, idx: Tensor | None) -> Tensor:
    """``rows[idx]`` by ``index_select`` (several times faster than advanced indexing for wide
    rows on CPU); ``rows`` itself for ``idx`` None."""
    return rows if idx is None else rows.index_select(0, idx)


#: most runs of consecutive rows :func:`_runs` gives
MAX_RUNS = 8
#: fewest rows per run, on average, for which :meth:`ClientBank.sgd_step` adds a subset's step
#: back slice by slice rather than with ``index_add_`` (a loop over rows). Timed alone, one
#: thread: 998 of 1,000 rows of 4,810 floats in 3 runs, 1.3 ms by slices against 1.9 ms; 93 of
#: 100 rows in 6 runs (the MLP's four pieces), index_add_ faster on every piece, up to 3x
MIN_RUN_ROWS = 32


def _runs(idx: Tensor) -> list[tuple[int, int]] | None:
    """Increasing row indices ``idx`` as runs of consecutive rows ``[(start, stop), ...]``, or
    None when they are not increasing or make more than :data:`MAX_RUNS` runs."""
    i = idx.cpu().numpy()
    if i.size == 0:
        return []
    step = np.diff(i)
    cut = np.flatnonzero(step != 1)
    if cut.size >= MAX_RUNS or (step < 1).any():
        return None
    return list(zip(np.r_[i[0], i[cut + 1]].tolist(), np.r_[i[cut] + 1, i[-1] + 1].tolist()))


def _views(rows: Tensor, slices: dict[str, tuple[int, int, tuple]]) -> Params:
    return {k: rows[:, a:b].view(rows.shape[0], *shape) for k, (a, b, shape) in slices.items()}
