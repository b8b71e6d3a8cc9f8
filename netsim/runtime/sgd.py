"""Typed training hyper-parameters: a scenario's ``train`` section and one SGD step's settings.

:class:`Train` is the validated ``train`` section (``netsim.scenario.config.TRAIN_FIELDS``) of a
scenario or of one algorithm's override; :class:`SGD` is what :meth:`ClientBank.sgd_step` takes
(``torch.optim.SGD`` semantics: lr, momentum, weight decay, Nesterov, plus a per-client
gradient-norm clip).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Mapping

from torch import Tensor


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
class Train:
    """A validated ``train`` section: E local steps of mini-batch SGD."""

    lr: float
    momentum: float
    weight_decay: float
    clip: float | None
    batch_size: int
    local_steps: int

    @classmethod
    def from_spec(cls, spec: Mapping) -> "Train":
        """From a mapping validated against ``TRAIN_FIELDS`` (same keys)."""
        return cls(**{f.name: spec[f.name] for f in fields(cls)})

    @property
    def sgd(self) -> SGD:
        """The SGD step these settings describe."""
        return SGD(self.lr, self.momentum, self.weight_decay, self.clip)
