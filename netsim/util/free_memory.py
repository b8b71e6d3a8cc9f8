"""Free memory, and the refusal of a need that exceeds it: MemAvailable of ``/proc/meminfo``
(Linux; elsewhere unknown, and nothing is refused) or ``torch.cuda.mem_get_info``. A scenario's
estimate (netsim.scenario.memory), a generated dataset before it is generated
(``netsim.data.datasets.DatasetInfo.size``) and a stand-in before it is written are refused here.
"""
from __future__ import annotations

from pathlib import Path

from netsim.errors import ConfigError


def human(nbytes: float) -> str:
    """``1.5 GB``-style size (powers of 1000)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if nbytes < 1000 or unit == "TB":
            return f"{nbytes:.1f} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1000
    raise AssertionError


def available(device) -> tuple[int | None, str]:
    """(free bytes or None when unknown, where that number comes from) on ``device``."""
    if getattr(device, "type", str(device)) == "cuda":
        import torch
        free, _ = torch.cuda.mem_get_info(device)
        return int(free), f"free on {device}"
    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():
        return None, "unknown"
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024, "available on the CPU (MemAvailable)"
    return None, "unknown"


def require(need: int, device, field: str, value, what: str, detail: str = "") -> None:
    """Refuse (ConfigError on ``field``, naming ``value``) ``what`` (e.g. ``a scenario``) when its
    ``need`` of bytes exceeds the free memory of ``device``; ``detail`` follows the total."""
    free, source = available(device)
    if free is not None and need > free:
        raise ConfigError(field, value, f"{what} that fits in the {human(free)} {source}",
                          f"it needs at least {human(need)}" + (f": {detail}" if detail else ""))
