"""Scenarios and helpers shared by several test files (``from helpers import ...``: pytest puts
this folder on ``sys.path``, conftest.py's folder). A test file keeps what only it uses."""
from __future__ import annotations

from netsim import Scenario
from netsim.running.loop import build_algorithm
from netsim.sim.facade import RoundReport

# the small run of most whole-run tests (results contract, analyses, figures, output, sweeps)
TINY = {
    "name": "tiny",
    "seed": 0,
    "clients": 8,
    "data": {"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 2}},
    "model": {"name": "mlp", "hidden": [16]},
    "network": {"topology": {"name": "ring"}, "links": {"name": "bernoulli", "p": [0.5, 0.9]},
                "latency": {"base": [0.01, 0.02], "bandwidth": 1.0e6}},
    "train": {"lr": 0.1, "batch_size": 8, "local_steps": 2},
    "schedule": {"rounds": 4, "eval_every": 2},
    "algorithms": ["local", "fedavg", "oracle", "sgp", "dpsgd"],
    "outputs": {"figures": False, "progress": False},
}

# CoBo (test_cobo*.py, the figure scripts): paper Example 2's quadratic clusters, and digits
QUAD = {
    "name": "quad", "seed": 0, "clients": 6,
    "data": {"dataset": {"name": "cobo_quadratic", "n_samples": 600, "dim": 4, "sigma": 0.0,
                         "spread": 1.0, "curvature": [0.5, 1.5]},
             "partition": {"name": "clusters", "clusters": 3}},
    "model": "mean",
    "network": {"topology": "complete", "latency": {"base": 0.001}},
    "train": {"lr": 0.1, "batch_size": 4, "local_steps": 1},
    "schedule": {"rounds": 10, "eval_every": 5},
    "algorithms": [{"name": "cobo", "sampling": "all", "rho": 1.0, "gamma": 0.1}],
    "outputs": {"figures": False, "progress": False},
}

DIGITS = {
    "name": "cobo_digits", "seed": 0, "clients": 6,
    "data": {"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 3,
                                                "replicate": True},
             "max_samples_per_client": 120},
    "model": {"name": "mlp", "hidden": [8]},
    "network": {"topology": "complete", "links": {"name": "bernoulli", "p": 0.5},
                "latency": {"base": 0.001}},
    "train": {"lr": 0.1, "batch_size": 8, "local_steps": 1},
    "schedule": {"rounds": 12, "eval_every": 4},
    "algorithms": [{"name": "cobo", "sampling": "all"}],
    "outputs": {"figures": False, "progress": False},
}

# PDBO-MTL (test_pdbo.py, the figure scripts)
PDBO = {
    "name": "pdbo_tiny", "seed": 0, "clients": 8,
    "data": {"dataset": "digits",
             "partition": {"name": "feature_shift", "clusters": 2, "dirichlet": 0.4,
                           "min_size": 20},
             "val_fraction": 0.2, "test_fraction": 0.2},
    "model": {"name": "mlp", "hidden": [8]},
    "network": {"topology": "complete", "links": {"name": "bernoulli", "p": [0.4, 0.8]}},
    "train": {"lr": 0.5, "batch_size": 8, "weight_decay": 0.001},
    "schedule": {"rounds": 3, "eval_every": 1},
    "algorithms": [{"name": "pdbo_mtl", "learners": 2, "inner_steps": 100, "decay_last": [40, 20],
                    "neumann_steps": 5}],
    "outputs": {"figures": False, "progress": False},
}


def scenario(raw: dict, **over) -> Scenario:
    """``raw`` with dotted-path overrides, e.g. ``scenario(TINY, **{"schedule.rounds": 2})``."""
    return Scenario(raw).with_overrides(over)


def tiny(**over) -> Scenario:
    """:data:`TINY` with dotted-path overrides."""
    return scenario(TINY, **over)


def fails(capsys, argv: list[str], *expected: str) -> str:
    """Run the CLI; assert exit code 2 and one line on stderr containing ``expected``."""
    from netsim.cli import main

    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("netsim: error: ") and err.count("\n") == 1, err
    for text in expected:
        assert text in err, err
    return err


def build(sc: Scenario | dict, over: dict | None = None, index: int = 0, seed: int | None = None):
    """The ``index``-th algorithm of a scenario (with ``over`` applied), built as the runner
    builds it for ``seed`` (default the scenario's), to drive round by round (:func:`play`)."""
    sc = sc if isinstance(sc, Scenario) else Scenario(sc)
    return build_algorithm(sc.with_overrides(over or {}), index, seed)


def play(alg, rounds: range) -> list[RoundReport]:
    """Rounds as the runner plays them (closing each round on the simulator); their reports."""
    reports = []
    for t in rounds:
        reports.append(alg.play(t))
        alg.net.end_round()
    return reports


def spy_commits(alg) -> list[tuple]:
    """The pairs ``(a, b)`` of every CoBo W update (``commit``), one entry per round."""
    pairs = []
    commit = alg.commit

    def spy(a, b, x):
        pairs.append((a, b))
        commit(a, b, x)

    alg.commit = spy
    return pairs


def quad_truth(alg):
    """Per-client centre mu_k(i) (every sample equals it when sigma = 0) and curvature a_i of a
    :data:`QUAD` algorithm."""
    return (alg.data.y["train"][:, 0].double().numpy(),
            alg.data.loss_scale.double().numpy())
