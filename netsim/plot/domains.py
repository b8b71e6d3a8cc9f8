"""Domain weights over rounds: the weights one client gives to each of the others (CoBo Figure 4)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from netsim.plot.style import COLUMN, looks, new_figure, save, styled


def ema(values: np.ndarray, smoothing: float) -> np.ndarray:
    """Exponential moving average along axis 0: ``s_0 = v_0``, ``s_t = a s_{t-1} + (1 - a) v_t``."""
    out = np.array(values, float)
    for t in range(1, len(out)):
        out[t] = smoothing * out[t - 1] + (1 - smoothing) * out[t]
    return out


@styled
def plot_domain_weights(W: np.ndarray, rounds: np.ndarray, client: int, path: str | Path,
                        names: list[str] | None = None, smoothing: float = 0.0,
                        title: str = "", pdf: bool = False) -> list[Path]:
    """Curves ``W[:, client, j]`` over ``rounds`` for every other client j (``W`` [E, N, N], row
    i = weights client i gives), EMA-smoothed with factor ``smoothing`` (the paper smooths too)."""
    W = np.asarray(W, float)
    n = W.shape[1]
    names = names or [f"client {j}" for j in range(n)]
    others = [j for j in range(n) if j != client]
    look = looks([names[j] for j in others])
    fig, ax = new_figure(COLUMN, 2.6)
    for j in others:
        ax.plot(rounds, ema(W[:, client, j], smoothing), label=names[j],
                **look[names[j]].line(len(rounds)))
    ax.set_xlabel("round")
    ax.set_ylabel(f"weight given by {names[client]}")
    ax.set_title(title or f"domain weights of {names[client]}")
    ax.legend(ncol=2)
    return save(fig, path, pdf)
