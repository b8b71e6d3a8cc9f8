"""pFedGraph: the per-client QP (against scipy), its closed forms, the regulariser, a whole run."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from algorithms.pfedgraph import cosine_regulariser_grad, graph_rows, project_simplex
from netsim import Scenario, run
from netsim.analysis.graphs import oracle_matrix


def _qp_scipy(d: np.ndarray, p: np.ndarray, alpha: float) -> np.ndarray:
    """``min alpha a^T a + (d - 2 alpha p)^T a`` on the simplex, by SLSQP."""
    m = len(d)
    q = d - 2 * alpha * p
    res = minimize(lambda a: alpha * a @ a + q @ a, np.full(m, 1 / m),
                   jac=lambda a: 2 * alpha * a + q, method="SLSQP", bounds=[(0, None)] * m,
                   constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1,
                                 "jac": lambda a: np.ones(m)}],
                   options={"ftol": 1e-14, "maxiter": 500})
    return res.x


@pytest.mark.parametrize("alpha", [0.05, 0.8, 5.0])
def test_graph_rows_solve_the_qp(alpha):
    rng = np.random.default_rng(0)
    delta = torch.as_tensor(rng.normal(size=(7, 20)))
    p = torch.as_tensor(rng.dirichlet(np.ones(7)))
    a = graph_rows(delta, p, alpha, threshold=0.9).numpy()
    unit = delta / delta.norm(dim=1, keepdim=True)
    d = (-(unit @ unit.T)).numpy()
    d[d < -0.9] = -1.0
    np.testing.assert_allclose(a.sum(1), 1.0, atol=1e-12)
    assert (a >= 0).all()
    for i in range(7):
        np.testing.assert_allclose(a[i], _qp_scipy(d[i], p.numpy(), alpha), atol=1e-6)


def test_projection_closed_forms():
    """A point of the simplex projects to itself; a constant shift does not move the projection;
    e_1 + big pushes everything to the first vertex."""
    p = torch.tensor([[0.2, 0.5, 0.3]], dtype=torch.float64)
    torch.testing.assert_close(project_simplex(p), p)
    torch.testing.assert_close(project_simplex(p + 7.0), p)
    torch.testing.assert_close(project_simplex(torch.tensor([[5.0, 0.0, 0.0]])),
                               torch.tensor([[1.0, 0.0, 0.0]]))


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
def test_a_diverged_row_projects_to_nan_not_to_an_index_error(device):
    """A non-finite row (a diverged client's update) comes out NaN for the health check to report,
    the other rows as before; it used to gather at index -1 (a device-side assert on CUDA)."""
    v = torch.tensor([[0.2, 0.5, 0.3], [float("nan"), 1.0, 0.0], [5.0, 0.0, 0.0]], device=device)
    out = project_simplex(v).cpu()
    assert torch.isnan(out[1]).all()
    torch.testing.assert_close(out[[0, 2]], torch.tensor([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0]]))


def test_identical_updates_give_the_data_prior():
    """All updates alike (cos > threshold): d = -1 everywhere, so every row equals p."""
    delta = torch.ones(4, 6, dtype=torch.float64) + 1e-3 * torch.arange(24.).reshape(4, 6)
    p = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    torch.testing.assert_close(graph_rows(delta, p, 0.8, 0.9), p.expand(4, 4))


def test_regulariser_gradient_matches_autograd():
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(3, 10, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(3, 10, generator=g, dtype=torch.float64)
    (0.7 * (c * theta).sum(1) / theta.norm(dim=1)).sum().backward()
    torch.testing.assert_close(cosine_regulariser_grad(theta.detach(), c, 0.7), theta.grad)


def test_pfedgraph_run_graph_and_bytes(tmp_path):
    """Two label-permutation clusters: the learned graph keeps most weight inside the cluster.
    Bytes: round 0 sends d down and up per client; later rounds 2d down (model + c_i) and d up."""
    sc = Scenario({
        "name": "pfg", "seed": 0, "clients": 8,
        "data": {"dataset": "digits", "partition": {"name": "label_permutation", "clusters": 2}},
        "model": {"name": "mlp", "hidden": [16]},
        "train": {"lr": 0.1, "batch_size": 8, "local_steps": 5},
        "schedule": {"rounds": 4, "eval_every": 4},
        "algorithms": [{"name": "pfedgraph", "reg_sign": "pull"}],
        "outputs": {"figures": False, "progress": False}})
    res = run(sc, out=tmp_path, quiet=True)
    w = res.arrays("collab", "pfedgraph", 0)["W"][-1]
    np.testing.assert_allclose(w.sum(1), 1.0, atol=1e-5)
    same = oracle_matrix(res.clients["cluster"].to_numpy()) | np.eye(8, dtype=bool)
    assert (w * same).sum(1).min() > 0.75
    size = (64 * 16 + 16 + 16 * 10 + 10) * 4
    np.testing.assert_allclose(res.network["bytes_sent"], [16 * size] + [24 * size] * 3)
