"""Which torch device a run uses (``device:`` in a scenario)."""
from __future__ import annotations

import torch

from netsim.errors import ConfigError


def resolve_device(name: str | torch.device) -> torch.device:
    """``auto`` -> CUDA if available else CPU; ``cpu``/``cuda``/``cuda:k`` as given (checked)."""
    if isinstance(name, torch.device):
        name = str(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu" or (isinstance(name, str) and name.split(":")[0] == "cuda"
                         and torch.cuda.is_available()):
        return torch.device(name)
    raise ConfigError("device", name, "auto, cpu or cuda",
                      hint="CUDA is not available here" if str(name).startswith("cuda") else "")
