"""Models written so N clients compute in one call: ``MODELS`` registry and ``build_model``.

``build_model(spec, input_shape, num_classes, task, device="auto")`` returns a
:class:`~netsim.models.base.BatchedModel`. Convolutional models take ``backend: auto | loop |
vmap | grouped``; ``auto`` is a fixed rule (``vmap`` on CUDA, ``loop`` on CPU, where running the
convolutional trunk client by client beats ``vmap`` and grouped convolutions for small CNNs) so
that a config and a device always give the same backend, hence the same numbers.
"""
from __future__ import annotations

import torch

from netsim.errors import ConfigError
from netsim.models.base import BatchedModel, SequentialModel
from netsim.models.zoo import BACKENDS, MODELS
from netsim.models import lstm  # noqa: F401  (registers char_lstm)
from netsim.util.device import resolve_device

TASKS = ("classification", "regression")

__all__ = ["MODELS", "BACKENDS", "BatchedModel", "SequentialModel", "build_model",
           "auto_backend"]


def auto_backend(device: str | torch.device) -> str:
    """The backend ``auto`` picks for convolutions on ``device``."""
    return "grouped" if resolve_device(device).type == "cuda" else "loop"


def build_model(spec: dict | str, input_shape: tuple, num_classes: int, task: str,
                device: str | torch.device = "auto") -> BatchedModel:
    """Validate ``spec`` and build the model; output width is ``num_classes`` (classes, or
    target dimensions for regression). Shape mismatches raise :class:`ConfigError`."""
    spec = MODELS.resolve(spec, "model")
    if task not in TASKS:
        raise ConfigError("data.task", task, "one of " + ", ".join(TASKS))
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ConfigError("data.num_classes", num_classes, "an int >= 1")
    params = {k: v for k, v in spec.items() if k != "name"}
    backend = params.pop("backend", "auto")
    if backend == "auto":
        backend = auto_backend(device)
    try:
        return MODELS.get(spec["name"], "model.name").obj(tuple(input_shape), num_classes,
                                                          backend, **params)
    except ValueError as err:
        raise ConfigError("model.name", spec["name"],
                          f"a model that accepts inputs of shape {tuple(input_shape)}",
                          hint=str(err)) from err
