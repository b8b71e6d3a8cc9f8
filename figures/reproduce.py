"""Regenerate every table and figure of docs/papers/reproduction.md from results folders.

    python figures/reproduce.py [--results DIR] [--run] [--only dpfl|diple|pdbo|cobo] [--doc MD]

Each paper's runs (:data:`PAPERS`) live in ``DIR/<scenario name>/`` (default ``results/``). With
``--run`` the missing ones are run first through ``netsim.run`` with ``resume=True``: a finished
folder is kept as it is, an interrupted one goes on from its checkpoint. Without ``--run`` only
existing folders are read, and each missing one is named on stderr (exit status 1).

The doc's generated parts sit between ``<!-- reproduce:KEY -->`` and ``<!-- /reproduce:KEY -->``
and are rewritten in place (the prose around them is hand-written): per folder the accuracy
table (mean and bottom decile, 95% Student-t interval over seeds, per seed values), the paired
differences of the comparisons the paper claims (netsim.analysis.paired), DiPLe's learned graph
and the figures, written as PNG into ``reproduction/`` next to the doc.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from netsim import Results, Scenario, run
from netsim.analysis.folder import has_arrays, runs
from netsim.analysis.paired import paired_difference
from netsim.analysis.per_run import analyze_run
from netsim.analysis.series import accuracy_curves, graph_series
from netsim.analysis.stats import mean_ci
from netsim.analysis.summary import LEARNED_GROUPS, table_group
from netsim.plot import legend_names, plot_accuracy, plot_series
from netsim.results import INCOMPLETE

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "papers" / "reproduction.md"
#: the doc's runs used one torch thread (a thread count can change the last digits)
THREADS = 1


@dataclass(frozen=True)
class Study:
    """One results folder: a scenario of scenarios/ run for ``seeds``, with dotted overrides
    and without the algorithms labelled in ``drop``. ``lr``: one learning rate for every
    algorithm (a run of the learning-rate grid: each algorithm's own ``train.lr`` is dropped, the
    folder is named ``<name>_lr<lr>``). ``grid``: the learning rates the protocol tries for the
    study's scenario (:func:`tuning_studies`)."""
    scenario: str
    seeds: tuple[int, ...]
    overrides: tuple[tuple[str, object], ...] = ()
    drop: tuple[str, ...] = ()
    lr: float | None = None
    grid: tuple[float, ...] = ()

    def load(self) -> Scenario:
        sc = Scenario.load(ROOT / "scenarios" / f"{self.scenario}.yaml").with_overrides(
            dict(self.overrides))
        raw = dict(sc.raw)
        if self.drop:
            raw["algorithms"] = [a for a in raw["algorithms"]
                                 if label_of(a) not in self.drop]
        if self.lr is not None:
            raw["name"] = f"{raw['name']}_lr{self.lr:g}"
            raw["train"] = {**raw.get("train", {}), "lr": self.lr}
            raw["algorithms"] = [without_lr(a) for a in raw["algorithms"]]
        return Scenario(raw, sc.path) if raw != sc.raw else sc

    @property
    def name(self) -> str:
        return self.load().name

    @property
    def whole(self) -> "Study":
        """The study's scenario with every algorithm at its own lr (no drop, no grid lr)."""
        return Study(self.scenario, self.seeds, self.overrides)


def label_of(spec: str | dict) -> str:
    """An algorithm entry's label (its name when it has none)."""
    return spec if isinstance(spec, str) else spec.get("label") or spec["name"]


def without_lr(spec: str | dict) -> str | dict:
    """An algorithm entry without its own ``train.lr`` (the scenario's then applies)."""
    if isinstance(spec, str) or "lr" not in spec.get("train", {}):
        return spec
    train = {k: v for k, v in spec["train"].items() if k != "lr"}
    return {k: v for k, v in spec.items() if k != "train"} | ({"train": train} if train else {})


def own_lrs(sc: Scenario) -> dict[str, float]:
    """Label -> the learning rate each algorithm of the scenario trains with."""
    lr = sc.raw.get("train", {}).get("lr", 0.05)
    return {label_of(a): (a.get("train", {}).get("lr", lr) if isinstance(a, dict) else lr)
            for a in sc.raw["algorithms"]}


def tuning_studies(study: Study) -> list[Study]:
    """The learning-rate protocol's runs: seed 0 of the study's scenario (every algorithm, also
    those the study drops) at each lr of its grid."""
    return [replace(study.whole, seeds=(0,), lr=lr) for lr in study.grid]


@dataclass(frozen=True)
class Block:
    """One generated part of the doc (between its markers): ``parts`` of :data:`PARTS` drawn
    from the study's folder; ``pairs`` the paired comparisons (A, B) of its table."""
    key: str
    study: Study
    parts: tuple[str, ...] = ("accuracy", "paired", "figure")
    pairs: tuple[tuple[str, str], ...] = ()
    claims: tuple[tuple[str, str, str], ...] = ()

    def studies(self) -> list[Study]:
        """Every folder the block reads, the one its parts get first: the study's, or the grid's
        runs for a tuning table (which reads the grid only)."""
        return tuning_studies(self.study) if self.parts == ("tuning",) else [self.study]


def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    """``"a:b c:d"`` (as ``netsim analyze --paired``) as ((a, b), (c, d))."""
    return tuple((a, b) for a, b in (p.split(":") for p in text.split()))


DPFL = Study("dpfl_100", (0, 1, 2, 3, 4))
DIPLE = Study("diple_100_mnist1d", (0, 1, 2, 3, 4))
PDBO = Study("pdbo_100_mnist1d", (0, 1, 2, 3, 4))
PDBO_LR = Study("pdbo_100_mnist1d", (0, 1, 2, 3, 4),
                (("train.lr", 0.1), ("name", "pdbo_100_mnist1d_lr0.1")))
COBO = Study("cobo_cross_device_mnist1d", (0, 1, 2, 3, 4))
#: chosen on seed 0's mean validation accuracy among 5 settings (1 local step at lr 0.1, the
#: scenario's, 0.3 and 1.0; 5 local steps at lr 0.1 and 0.3), rho x lr kept at the scenario's
#: 0.005; FC left out: its O(n^2) gradients per step would take about 17 min a seed
COBO_TUNED = Study("cobo_cross_device_mnist1d", (0, 1, 2, 3, 4),
                   (("name", "cobo_cross_device_mnist1d_tuned"), ("train.local_steps", 5),
                    ("train.lr", 0.3), ("algorithms.cobo.rho", 0.05 / 3)), drop=("fc",))
PAPERS: dict[str, tuple[Block, ...]] = {
    "dpfl": (Block("dpfl", DPFL, pairs=_pairs(
        "dpfl_inf:random_inf dpfl_20:random_20 dpfl_10:random_10 dpfl_5:random_5 "
        "dpfl_inf:local dpfl_20:local dpfl_10:local dpfl_5:local dpfl_inf:fedavg_ft "
        "dpfl_inf:pfedgraph fedavg_ft:local local:fedavg")),),
    "pdbo": (Block("pdbo", PDBO, pairs=_pairs(
        "pdbo_mtl:pdbo_mtl_local pdbo_mtl:sgp sgp:local pdbo_mtl:local pdbo_mtl_local:sgp")),
             Block("pdbo_lr0.1", PDBO_LR, ("accuracy", "paired"),
                   _pairs("pdbo_mtl:pdbo_mtl_local pdbo_mtl:sgp sgp:local"))),
    "diple": (Block("diple", DIPLE, pairs=_pairs(
        "diple:apfl diple:local diple:fedavg apfl:local")),
              Block("diple_graph", DIPLE, ("graph",))),
    "cobo": (Block("cobo", COBO, ("accuracy", "figure", "recovery_figure")),
             Block("cobo_tuned", COBO_TUNED, ("accuracy", "paired"), _pairs(
                 "cobo:local cobo:ifca cobo:fedavg_ft oracle:cobo"))),
}


#: the papers in their own regime (scenarios/regime/): 5 seeds, each method's lr chosen by the
#: protocol on seed 0 (its grid), the headline claims as (claim, A, B): A > B or A ≥ B
REGIME_SEEDS = (0, 1, 2, 3, 4)
#: DiPLe's ablation (netsim's defaults, `diple`) runs in the grid only (8 min a seed)
R_DIPLE = Study("regime/diple", REGIME_SEEDS, drop=("diple",), grid=(0.01, 0.03, 0.1, 0.3, 1.0))
R_PDBO = Study("regime/pdbo", REGIME_SEEDS, grid=(0.1, 0.5))
R_COBO = Study("regime/cobo", REGIME_SEEDS, grid=(0.01, 0.03, 0.1))
R_DPFL = Study("regime/dpfl", REGIME_SEEDS, grid=(0.01, 0.03, 0.1))
#: the rest of DPFL's Fig. 3 (B_c = 20 and 5) at regime/dpfl's lr
R_DPFL_BUDGET = Study("regime/dpfl_budget", REGIME_SEEDS)
#: studies without a grid of their own: the study whose protocol chose their lr
LR_FROM = {R_DPFL_BUDGET: R_DPFL}
REGIME_PARTS = ("accuracy", "trained", "claims", "paired", "figure")


def regime(paper: str, study: Study, pairs: str, claims: tuple[tuple[str, str, str], ...],
           extra: tuple[str, ...] = ()) -> tuple[Block, Block]:
    """A paper's regime blocks: its tables, claims and curves, and its learning-rate tuning."""
    return (Block(f"regime_{paper}", study, REGIME_PARTS + extra, _pairs(pairs), claims),
            Block(f"regime_{paper}_tuning", study, ("tuning",)))


REGIME: dict[str, tuple[Block, ...]] = {
    "dpfl": regime("dpfl", R_DPFL, "dpfl_inf:random_inf fedavg_ft:local", (
        ("DPFL > random graph (B_c = inf)", "dpfl_inf", "random_inf"),
        ("DPFL > random graph (B_c = 10)", "dpfl_10", "random_10"),
        ("DPFL > FedAvg+FT", "dpfl_inf", "fedavg_ft"),
        ("DPFL > pFedGraph", "dpfl_inf", "pfedgraph"),
        ("DPFL > Local", "dpfl_inf", "local"),
        ("Local > FedAvg", "local", "fedavg"))) + (
        Block("regime_dpfl_budget", R_DPFL_BUDGET, ("accuracy", "trained", "claims", "figure"),
              (), (
                  ("DPFL > random graph (B_c = 20)", "dpfl_20", "random_20"),
                  ("DPFL > random graph (B_c = 5)", "dpfl_5", "random_5"))),),
    "pdbo": regime("pdbo", R_PDBO, "pdbo_mtl:local oracle:pdbo_mtl", (
        ("PDBO-MTL ≥ PDBO-MTL (local)", "pdbo_mtl", "pdbo_mtl_local"),
        ("PDBO-MTL > SGP", "pdbo_mtl", "sgp"),
        ("PDBO-MTL (local) ≥ SGP", "pdbo_mtl_local", "sgp"),
        ("SGP > Local", "sgp", "local"))),
    "diple": regime("diple", R_DIPLE, "fedavg_ft:diple_paper", (
        ("DiPLe > Local", "diple_paper", "local"),
        ("DiPLe > APFL", "diple_paper", "apfl"),
        ("Local > APFL", "local", "apfl"),
        ("APFL > FedAvg", "apfl", "fedavg"))),
    "cobo": regime("cobo", R_COBO, "oracle:cobo", (
        ("CoBo > IFCA", "cobo", "ifca"),
        ("CoBo > Ditto", "cobo", "ditto"),
        ("CoBo > FedAvg+FT", "cobo", "fedavg_ft"),
        ("CoBo > Local", "cobo", "local"),
        ("CoBo > FedAvg", "cobo", "fedavg")), ("recovery_figure",)),
}
REGIMES = {"short": PAPERS, "paper": REGIME}


def pm(mean: float, low: float, high: float, digits: int = 4, scale: float = 1.0,
       sign: str = "") -> str:
    """``mean ± half-width`` of an interval, times ``scale`` (``sign="+"``: signed mean)."""
    return f"{scale * mean:{sign}.{digits}f} ± {scale * (high - low) / 2:.{digits}f}"


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def header(cells: list[str]) -> list[str]:
    """A table's header row and its separator."""
    return [row(cells), "|" + "---|" * len(cells)]


def learned_labels(res: Results) -> list[str]:
    """Labels whose collaboration matrix learns clusters (the run table's clusters P/R)."""
    names = {a["label"]: a["name"] for a in res.config["algorithms"]}
    return [label for label in names
            if LEARNED_GROUPS.get(table_group(names[label])) == "collab"]


def accuracy_table(block: Block, res: Results, figures: Path) -> str:
    """Mean and bottom-decile test accuracy per algorithm: over several seeds mean ± 95%
    interval and the per-seed values; over one seed the values and the cluster recovery."""
    algs = res.summary["algorithms"]
    seeds = max(len(s["seeds"]) for s in algs.values())
    if seeds == 1:
        learned = learned_labels(res)
        lines = header(["algorithm", "mean", "bottom 10%", "clusters P/R"])
        for label, s in algs.items():
            pr = (f"{s['collab_precision']:.2f} / {s['collab_recall']:.2f}"
                  if label in learned and s.get("collab_precision") is not None else "–")
            lines.append(row([label, f"{s['mean_accuracy']:.4f}",
                              f"{s['bottom10_accuracy']:.4f}", pr]))
        return "\n".join(lines)
    lines = header(["algorithm", "mean acc (±95% CI)", "bottom 10% (±95% CI)",
                    "per seed mean/bottom10"])
    for label, s in algs.items():
        per = [s["per_seed"][k] for k in sorted(s["per_seed"], key=int)]
        means, bottoms = ([p[key] for p in per] for key in ("mean_accuracy", "bottom10_accuracy"))
        lines.append(row([label, pm(*mean_ci(means)), pm(*mean_ci(bottoms)),
                          ", ".join(f"{m:.4f}/{b:.4f}" for m, b in zip(means, bottoms))]))
    return "\n".join(lines)


def points(d: dict) -> str:
    """A paired difference's mean ± 95% half-width in accuracy points."""
    return pm(d["mean"], d["ci_low"], d["ci_high"], 2, 100, "+") + " pts"


def verdict(d: dict) -> str:
    return ("yes (CI > 0)" if d["ci_low"] > 0 else "no (CI < 0)" if d["ci_high"] < 0
            else "not significant")


def paired_table(block: Block, res: Results, figures: Path) -> str:
    """Per comparison A − B: the per-seed differences in points, their mean ± 95% interval for
    the mean and the bottom-decile accuracy, and whether A beats B (interval above 0)."""
    lines = header(["comparison", "paired diff mean acc (±95% CI)", "per seed (pts)",
                    "paired diff bottom10 (±95% CI)", "beats?"])
    for a, b in block.pairs:
        mean, bottom = (paired_difference(res.summary, a, b, key)
                        for key in ("mean_accuracy", "bottom10_accuracy"))
        lines.append(row([f"{a} − {b}", points(mean),
                          ", ".join(f"{100 * v:+.2f}" for v in mean["per_seed"]),
                          points(bottom), verdict(mean)]))
    return "\n".join(lines)


#: the learned graph's metrics (analyze_run keys) in the DiPLe table, with their format
GRAPH_METRICS = {"density": ("density", 4), "in-neighbours per client": ("in_degree_mean", 2),
                 "asymmetry (%)": ("asymmetry", 1), "reciprocity": ("reciprocity", 3),
                 "realised link graph asymmetry (%)": ("link_asymmetry", 1)}


def graph_table(block: Block, res: Results, figures: Path) -> str:
    """The learned collaboration graph (edges: weights above 0) of every learned-graph label,
    mean ± 95% interval over seeds and per seed (netsim.analysis.per_run.analyze_run)."""
    lines = header(["algorithm", "metric", "mean (±95% CI)", "per seed"])
    for label in learned_labels(res):
        per = [analyze_run(res, alg, seed) for alg, seed in runs(res) if alg == label]
        for name, (key, digits) in GRAPH_METRICS.items():
            vals = [p[key] for p in per]
            lines.append(row([label, name, pm(*mean_ci(vals), digits),
                              ", ".join(f"{v:.{digits}f}" for v in vals)]))
    return "\n".join(lines)


def image(path: Path, figures: Path, caption: str) -> str:
    """Markdown image link to ``path`` relative to the doc (the parent of ``figures``)."""
    return f"![{caption}]({os.path.relpath(path, figures.parent)})"


def accuracy_figure(block: Block, res: Results, figures: Path) -> str:
    """Mean test accuracy vs rounds, 95% band over seeds, every algorithm."""
    path, = plot_accuracy(accuracy_curves(res), figures / f"{block.key}_accuracy.png",
                          names=legend_names(res))
    return image(path, figures, f"{block.key}: mean test accuracy vs rounds")


def recovery_figure(block: Block, res: Results, figures: Path) -> str:
    """Cluster precision and recall over rounds of each learned collaboration matrix (weights
    above half its largest off-diagonal weight, as the table's clusters P/R)."""
    series = {label: [graph_series(res, alg, seed, 0.5, relative_to_max=True)
                      for alg, seed in runs(res)
                      if alg == label and has_arrays(res, "collab", alg, seed)]
              for label in learned_labels(res)}
    path, = plot_series({k: v for k, v in series.items() if v}, ["precision", "recall"],
                        figures / f"{block.key}_recovery.png")
    return image(path, figures, f"{block.key}: cluster recovery over rounds")


#: the trained check: the last share of the evaluations, and the largest rise allowed over it
LAST_SHARE, FLAT = 0.2, 0.02


def trained_table(block: Block, res: Results, figures: Path) -> str:
    """Per algorithm, on the mean test accuracy over seeds per evaluation: the final value, the
    best over the last :data:`LAST_SHARE` of the rounds (at least the last two evaluations) and
    the rise over that window; trained when the final is within :data:`FLAT` of the best and
    the rise is at most :data:`FLAT` (the curve has flattened, it is not still climbing)."""
    curves = accuracy_curves(res).groupby(["algorithm", "round"], sort=False)["value"].mean()
    lines = header(["algorithm", "final", f"best, last {LAST_SHARE:.0%} of rounds",
                    "rise over them (pts)", "trained?"])
    for label in res.summary["algorithms"]:
        curve = curves[label].sort_index()
        rounds = curve.index.to_numpy()
        start = min(rounds[-2], rounds[-1] - LAST_SHARE * rounds[-1]) if len(rounds) > 1 \
            else rounds[-1]
        window = curve[curve.index >= start]
        final, best, rise = curve.iloc[-1], window.max(), curve.iloc[-1] - window.iloc[0]
        ok = final >= best - FLAT and rise <= FLAT
        lines.append(row([label, f"{final:.4f}", f"{best:.4f}", f"{100 * rise:+.2f}",
                          "yes" if ok else "no"]))
    return "\n".join(lines)


def claim_verdict(d: dict, text: str) -> str:
    """A claim "A > B" is reproduced when the paired 95% interval of A − B lies above 0; "A ≥ B"
    when it does not lie below 0; an interval below 0 is "not reproduced (reversed)"; an
    interval around 0 of a strict claim is a tie."""
    if d["ci_high"] < 0:
        return "not reproduced (reversed)"
    if d["ci_low"] > 0 or "≥" in text:
        return "reproduced"
    return "tie (interval contains 0)"


def claims_table(block: Block, res: Results, figures: Path) -> str:
    """Each headline claim: the paired differences of the mean test accuracy over seeds."""
    lines = header(["paper's claim", "A − B", "paired diff (±95% CI)", "per seed (pts)",
                    "verdict"])
    for text, a, b in block.claims:
        d = paired_difference(res.summary, a, b, "mean_accuracy")
        lines.append(row([text, f"{a} − {b}", points(d),
                          ", ".join(f"{100 * v:+.2f}" for v in d["per_seed"]),
                          claim_verdict(d, text)]))
    return "\n".join(lines)


def tuning_table(block: Block, res: Results, figures: Path) -> str:
    """The learning-rate protocol: seed 0's mean validation accuracy over clients at the last
    evaluation, per algorithm and grid value (one lr for all algorithms per run), the value it
    chooses (the highest; ties to the smaller lr) and the lr the scenario trains the algorithm
    with (they must agree: "≠" marks a scenario that does not follow its protocol); a run that
    diverged is never chosen."""
    grid = {s.lr: Results(folder(s, res.dir.parent)) for s in block.studies()}
    val = {lr: accuracy_curves(r, "val").sort_values("round").groupby("algorithm")["value"]
           .last() for lr, r in grid.items()}
    lines = header(["algorithm"] + [f"lr {lr:g}" for lr in grid] + ["chosen", "scenario"])
    for label, lr in own_lrs(block.study.whole.load()).items():
        scores = {g: None if r.summary["algorithms"][label].get("diverged") else
                  float(val[g][label]) for g, r in grid.items()}
        chosen = max((g for g, v in scores.items() if v is not None),
                     key=lambda g: (scores[g], -g))
        lines.append(row([label] + ["diverged" if v is None else f"{v:.4f}"
                                    for v in scores.values()]
                         + [f"{chosen:g}", f"{lr:g}" + ("" if lr == chosen else " ≠")]))
    return "\n".join(lines)


PARTS: dict[str, Callable[[Block, Results, Path], str]] = {
    "accuracy": accuracy_table, "paired": paired_table, "graph": graph_table,
    "figure": accuracy_figure, "recovery_figure": recovery_figure, "trained": trained_table,
    "claims": claims_table, "tuning": tuning_table}


def folder(study: Study, results: Path) -> Path:
    return results / study.name


def missing(study: Study, results: Path) -> str | None:
    """Why the study's folder cannot be read (None when it can)."""
    path = folder(study, results)
    if not (path / "summary.json").is_file():
        return "missing"
    if (path / INCOMPLETE).exists():
        return "unfinished"
    return None


def command(study: Study, results: Path) -> str:
    """The netsim command line that writes the study's folder."""
    sets = "".join(f" --set {k}={v}" for k, v in study.overrides)
    if study.lr is not None:   # the same runs as Study.load's (an algorithm's own lr set to it)
        own = [label_of(a) for a in study.whole.load().raw["algorithms"] if a != without_lr(a)]
        sets += "".join(f" --set algorithms.{label}.train.lr={study.lr:g}" for label in own)
        sets += f" --set train.lr={study.lr:g} --set name={study.name}"
    return (f"netsim run scenarios/{study.scenario}.yaml --seeds "
            f"{' '.join(map(str, study.seeds))}{sets} --out {results}")


def render(block: Block, res: Results, figures: Path) -> str:
    """The generated text of a block: its parts separated by blank lines."""
    return "\n\n".join(PARTS[p](block, res, figures) for p in block.parts)


def replace_block(doc: str, key: str, text: str) -> str:
    """``doc`` with the text between the markers of ``key`` replaced by ``text``."""
    start, end = f"<!-- reproduce:{key} -->", f"<!-- /reproduce:{key} -->"
    pattern = re.compile(re.escape(start) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(doc):
        raise SystemExit(f"no '{start}' ... '{end}' block in the doc")
    return pattern.sub(lambda _: f"{start}\n{text}\n{end}", doc)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="folder of the results folders (default: results)")
    p.add_argument("--run", action="store_true",
                   help="run (or resume) the scenarios whose folders are missing or unfinished")
    p.add_argument("--only", choices=list(PAPERS), help="one paper")
    p.add_argument("--regime", choices=list(REGIMES), default="short",
                   help="short: the runs at the papers' client counts (issue 20's tables); "
                   "paper: the papers in their own regime (scenarios/regime/, 5 seeds, the "
                   "learning-rate protocol's grid runs)")
    p.add_argument("--doc", type=Path, default=DOC,
                   help="the markdown file to rewrite (default: docs/papers/reproduction.md); "
                   "figures go into reproduction/ next to it")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    blocks = [b for paper, bs in REGIMES[a.regime].items() if a.only in (None, paper)
              for b in bs]
    if a.run:
        for study in dict.fromkeys(s for b in blocks for s in b.studies()):
            run(study.load(), seeds=list(study.seeds), out=a.results, resume=True,
                threads=THREADS)
    doc, figures, lacking = a.doc.read_text(), a.doc.parent / "reproduction", False
    for block in blocks:
        absent = [(s, why) for s in block.studies() if (why := missing(s, a.results))]
        for study, why in absent:
            print(f"{why}: {folder(study, a.results)} (block '{block.key}'; write it with "
                  f"--run or: {command(study, a.results)})", file=sys.stderr)
        if absent:
            lacking = True
            continue
        first = block.studies()[0]
        res = Results(folder(first, a.results))
        if res.summary["seeds"] != list(first.seeds):
            print(f"note: {res.dir} has seeds {res.summary['seeds']}, the doc's runs "
                  f"{list(first.seeds)}", file=sys.stderr)
        doc = replace_block(doc, block.key, render(block, res, figures))
    a.doc.write_text(doc)
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main())
