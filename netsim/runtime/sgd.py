"""Typed training hyper-parameters: a scenario's ``train`` section and one SGD step's settings.

:class:`Train` declares the ``train`` section of a scenario or of one algorithm's override (the
scenario is validated against it); :class:`SGD` is what :meth:`ClientBank.sgd_step` takes
(``torch.optim.SGD`` semantics: lr, momentum, weight decay, Nesterov, plus a per-client
gradient-norm clip).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from torch import Tensor

from netsim.schema.params import Params, param


@dataclass(frozen=True)
class SGD:
    """One SGD step's settings; ``lr`` may be a ``Tensor[M]`` (one rate per listed client)."""

    lr: float | Tensor
    momentum: float = 0.0
    weight_decay: float = 0.0
    clip: float | None = None
    nesterov: bool = False

    def with_lr(self, lr: float | Tensor) -> "SGD":
        """The same step with another learning rate."""
        return replace(self, lr=lr)


@dataclass(frozen=True)
class Train(Params):
    """The ``train`` section: E local steps of mini-batch SGD."""

    lr: float = param(0.05, "learning rate (eta)", lo=0)
    momentum: float = param(0.0, "SGD momentum", lo=0, hi=1)
    weight_decay: float = param(0.0, "L2 weight decay", lo=0)
    clip: float | None = param(None, "per-client gradient-norm clip", lo=0, lo_open=True)
    batch_size: int = param(32, "mini-batch size per client and step", lo=1)
    local_steps: int = param(5, "local SGD steps per round (E)", lo=1)

    @property
    def sgd(self) -> SGD:
        """The SGD step these settings describe."""
        return SGD(self.lr, self.momentum, self.weight_decay, self.clip)
