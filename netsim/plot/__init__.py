"""Figure functions (one per figure kind) and the set written at the end of a run."""
from __future__ import annotations

from pathlib import Path

from netsim.plot.curves import plot_accuracy, plot_collaboration
from netsim.plot.robustness import plot_robustness
from netsim.plot.timeline import plot_timeline
from netsim.sim.trace import read_trace


def write_run_figures(run_dir: str | Path, data=None, pdf: bool = False) -> list[Path]:
    """Accuracy vs rounds and vs simulated time, final collaboration matrices, the partition."""
    from netsim.results import Results

    res = Results(run_dir)
    fig_dir = res.dir / "figures"
    metrics = res.metrics
    out = plot_accuracy(metrics, fig_dir / "accuracy_vs_rounds.png", pdf=pdf)
    out += plot_accuracy(metrics, fig_dir / "accuracy_vs_time.png", x="sim_time", pdf=pdf)
    for f in sorted((res.dir / "collab").glob("*_seed*.npz")):
        alg, seed = f.stem.rsplit("_seed", 1)
        w = res.arrays("collab", alg, int(seed))["W"][-1]
        out += plot_collaboration(w, fig_dir / f"collab_{f.stem}.png", f"{alg} (seed {seed})", pdf)
    for f in sorted((res.dir / "trace").glob("*.csv")):
        out += plot_timeline(read_trace(f), 1, fig_dir / f"timeline_{f.stem}.png", pdf)
    if data is not None:
        from netsim.plot.partition import plot_partition
        out.append(plot_partition(data, fig_dir / "partition.png"))
    return out
