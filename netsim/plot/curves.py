"""Figures from a results folder: accuracy vs rounds and vs simulated time, collaboration matrices."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _save(fig, path: Path, pdf: bool) -> list[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    out = [path]
    if pdf:
        fig.savefig(path.with_suffix(".pdf"), bbox_inches="tight")
        out.append(path.with_suffix(".pdf"))
    plt.close(fig)
    return out


def plot_accuracy(metrics, path: Path, x: str = "round", split: str = "test",
                  pdf: bool = False) -> list[Path]:
    """Mean client accuracy (loss for regression) vs ``x`` per algorithm; band = std over seeds."""
    df = metrics[metrics["split"] == split]
    value = "accuracy" if df["accuracy"].notna().any() else "loss"
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for alg, g in df.groupby("algorithm", sort=False):
        per_seed = g.groupby(["seed", "round"])[[value, "sim_time"]].mean().reset_index()
        curve = per_seed.groupby("round").agg(m=(value, "mean"), s=(value, "std"),
                                              t=("sim_time", "mean")).reset_index()
        xs = curve["round"] if x == "round" else curve["t"]
        ax.plot(xs, curve["m"], label=alg)
        if per_seed["seed"].nunique() > 1:
            ax.fill_between(xs, curve["m"] - curve["s"], curve["m"] + curve["s"], alpha=0.2)
    ax.set_xlabel("round" if x == "round" else "simulated time [s]")
    ax.set_ylabel(f"mean {split} {value}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path, pdf)


def plot_collaboration(w: np.ndarray, path: Path, title: str = "", pdf: bool = False) -> list[Path]:
    """Heat map of a collaboration matrix (row i = weights client i gives to others)."""
    fig, ax = plt.subplots(figsize=(3.6, 3.2))
    im = ax.imshow(w, cmap="viridis", vmin=0)
    ax.set_xlabel("client j")
    ax.set_ylabel("client i")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046)
    return _save(fig, path, pdf)
