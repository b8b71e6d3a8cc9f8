"""Hyper-Gradient Push (Alg. 2): unbiasedness against the exact hyper-gradient of a
quadratic bilevel problem, the 1/delta_bar correction, SRB's failure on directed links, the
expected push weights and the batched Jacobian/Hessian-vector products."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from algorithms.hgp import (EdgeStats, expected_push_weights, grad_vjp, hgp_step, hgp_weights,
                            srb_naive_weights)
from netsim.runtime.mixing import push_sum_weights
from netsim.runtime.pushsum import PushSum

N, D, K = 5, 2, 2           # agents, inner dimension, outer dimension
GAMMA, RHO, M = 0.3, 0.1, 60


def _push(up: np.ndarray) -> np.ndarray:
    """Push weights of a batch of receiver-major realisations (push_sum_weights, batched)."""
    up = up | np.eye(up.shape[-1], dtype=bool)
    return up / up.sum(-2, keepdims=True)


class Quadratic:
    """f_i(x, lam_i) = 1/2 x^T A_i x - x^T (B_i lam_i + b_i);  F_i = 1/2 ||x_i - c_i||^2 +
    rho/2 ||lam_i||^2, with SGP (Nedić form) over links i->j up with probability avail[i, j]
    and the local step capped by kappa_i = min(1, w_i / min_weight) (1 for ``min_weight = 0``).

    The exact hyper-gradient: z* solves z = P_bar z - gamma kappa (A z / w - B lam - b) (eq. 5
    with the expected mixing matrix), so with K = I - P_bar (x) I + gamma diag(kappa_i A_i / w_i):
    d_lam F_bar = rho lam + gamma kappa B^T K^-T d_z F (implicit differentiation of eq. 6).
    """

    def __init__(self, avail: np.ndarray, seed: int = 0, gamma: float = GAMMA,
                 min_weight: float = 0.0):
        rng = np.random.default_rng(seed)
        self.avail, self.gamma = avail, gamma
        self.p_bar = expected_push_weights(avail)
        vals, vecs = np.linalg.eig(self.p_bar)
        w = np.real(vecs[:, np.argmax(np.real(vals))])
        self.w = w / w.sum() * N                                   # w* = P_bar w*
        self.kappa = np.minimum(1.0, self.w / min_weight) if min_weight > 0 else np.ones(N)
        self.min_weight = min_weight
        q = np.linalg.qr(rng.normal(size=(N, D, D)))[0]
        self.A = q @ (rng.uniform(0.5, 1.5, (N, D))[:, :, None] * q.transpose(0, 2, 1))
        self.B = rng.normal(size=(N, D, K))
        self.b, self.c = rng.normal(size=(N, D)), rng.normal(size=(N, D))
        self.lam = rng.normal(size=(N, K))
        blocks = np.zeros((N * D, N * D))
        for i in range(N):
            blocks[i * D:(i + 1) * D, i * D:(i + 1) * D] = self.kappa[i] * self.A[i] / self.w[i]
        self.K = np.eye(N * D) - np.kron(self.p_bar, np.eye(D)) + gamma * blocks
        self.radius = np.abs(np.linalg.eigvals(np.eye(N * D) - self.K)).max()

    def z_star(self, lam: np.ndarray) -> np.ndarray:
        rhs = self.gamma * self.kappa[:, None] * (np.einsum("ndk,nk->nd", self.B, lam) + self.b)
        return np.linalg.solve(self.K, rhs.ravel()).reshape(N, D)

    def outer(self, lam: np.ndarray) -> float:
        x = self.z_star(lam) / self.w[:, None]
        return 0.5 * ((x - self.c) ** 2).sum() + 0.5 * RHO * (lam ** 2).sum()

    def u0(self) -> np.ndarray:
        return (self.z_star(self.lam) / self.w[:, None] - self.c) / self.w[:, None]

    def exact(self) -> np.ndarray:
        return RHO * self.lam + self.indirect(self.u0())

    def indirect(self, u0: np.ndarray) -> np.ndarray:
        """The cooperative part ``gamma kappa B^T K^-T u0`` of d_lam F_bar for ``u0 = d_z F``."""
        adj = np.linalg.solve(self.K.T, u0.ravel()).reshape(N, D)
        return self.gamma * self.kappa[:, None] * np.einsum("ndk,nd->nk", self.B, adj)

    def run(self, weights, reps: int, seed: int, symmetric: bool = False,
            loss: float = 0.0) -> np.ndarray:
        """``reps`` independent HGP runs (M steps each), batched; ``weights(up)`` turns the
        receiver-major deliveries ``up[r, i, j]`` (j -> i: link up and, with ``loss``, the
        message not dropped) into the receive weights C."""
        rng = np.random.default_rng(seed)
        A, B, w = torch.tensor(self.A), torch.tensor(self.B), torch.tensor(self.w)[:, None]
        kappa = PushSum(N, min_weight=self.min_weight).step_scale(w, w.dtype)   # SGP's own cap
        u = torch.tensor(self.u0()).expand(reps, N, D).clone()
        v = torch.tensor(RHO * self.lam).expand(reps, N, K).clone()
        off = ~np.eye(N, dtype=bool)
        for _ in range(M):
            draw = rng.random((reps, N, N))
            if symmetric:
                draw = np.triu(draw, 1) + np.swapaxes(np.triu(draw, 1), 1, 2)
            up = (draw < self.avail.T) & off
            if loss:
                up &= rng.random(up.shape) >= loss
            c = torch.tensor(weights(up))
            hvp = torch.einsum("nab,rnb->rna", A, u)               # H_i u_i = A_i u_i
            mixed = -torch.einsum("nab,rna->rnb", B, u)            # (d_lam grad_x f_i)^T u_i
            u, v = hgp_step(u, v, c, hvp, mixed, self.gamma, w, kappa)
        return v.numpy()


def _avail(seed: int = 1, symmetric: bool = False) -> np.ndarray:
    a = np.random.default_rng(seed).uniform(0.4, 0.8, (N, N))
    if symmetric:
        a = np.triu(a, 1) + np.triu(a, 1).T
    np.fill_diagonal(a, 0.0)
    return a


def _rel(est: np.ndarray, exact: np.ndarray) -> float:
    return float(np.linalg.norm(est - exact) / np.linalg.norm(exact))


@pytest.fixture(scope="module")
def problem() -> Quadratic:
    return Quadratic(_avail())


def test_quadratic_exact_hypergradient_is_right(problem):
    """The closed form agrees with central finite differences of F_bar(z*(lam), lam), and the
    expected SGP map is a contraction (Assumption 3.1) so M = 60 Neumann terms suffice."""
    fd = np.zeros((N, K))
    for i in range(N):
        for k in range(K):
            e = np.zeros((N, K))
            e[i, k] = 1e-6
            fd[i, k] = (problem.outer(problem.lam + e) - problem.outer(problem.lam - e)) / 2e-6
    np.testing.assert_allclose(problem.exact(), fd, atol=1e-6)
    assert problem.radius < 0.8 and problem.radius ** M < 1e-5


def test_cooperative_part_vanishes_when_the_outer_cost_is_the_inner_cost():
    """F_i = f_i + rho/2 ||lam_i||^2 (an outer cost on the data the inner problem fits, as
    PDBO-MTL's train-split F_i): sum_i grad_x F_i(x_i*) = 0 at the SGP fixed point (push-sum
    conserves mass, 1^T (I - P_bar) = 0), so the cooperative part gamma B^T K^-T d_z F of
    d_lam F_bar shrinks in proportion to gamma and the exact hyper-gradient tends to the local one
    d_lam F_i in the consensus limit (it is not small at gamma = 0.3, where the fixed point is far
    from consensus). With another outer cost (F_i = 1/2 ||x_i - c_i||^2) the cooperative part
    tends to the consensus problem's B_i^T H^-1 sum_j grad_x F_j (H = sum_j A_j) and stays
    several times larger than the local part. Measured: ratios 0.69, 0.20, 0.060 against 5.6,
    4.1, 4.2 at gamma = 0.3, 0.01, 0.003; distance to the consensus limit 0.013 at 0.003."""
    avail = _avail()
    same, other = {}, {}
    for gamma in (0.3, 0.01, 0.003):
        q = Quadratic(avail, gamma=gamma)

        def inner_as_outer(lam: np.ndarray, q: Quadratic = q) -> float:
            x = q.z_star(lam) / q.w[:, None]
            f = 0.5 * np.einsum("na,nab,nb->", x, q.A, x) - np.einsum(
                "nd,nd->", x, np.einsum("ndk,nk->nd", q.B, lam) + q.b)
            return f + 0.5 * RHO * (lam ** 2).sum()

        x = q.z_star(q.lam) / q.w[:, None]
        grad_f = np.einsum("nab,nb->na", q.A, x) - np.einsum("ndk,nk->nd", q.B, q.lam) - q.b
        assert np.abs(grad_f.sum(0)).max() < 1e-10
        local = RHO * q.lam - np.einsum("ndk,nd->nk", q.B, x)            # d_lam F_i
        coop = q.indirect(grad_f / q.w[:, None])
        same[gamma] = np.linalg.norm(coop) / np.linalg.norm(local)
        if gamma == 0.01:                    # the split into local + cooperative is d_lam F_bar
            fd = np.zeros((N, K))
            for i in range(N):
                for k in range(K):
                    e = np.zeros((N, K))
                    e[i, k] = 1e-6
                    fd[i, k] = (inner_as_outer(q.lam + e) - inner_as_outer(q.lam - e)) / 2e-6
            np.testing.assert_allclose(local + coop, fd, atol=1e-5)
        h = q.A.sum(0)
        x_bar = np.linalg.solve(h, (np.einsum("ndk,nk->nd", q.B, q.lam) + q.b).sum(0))
        limit = np.einsum("ndk,d->nk", q.B, np.linalg.solve(h, (x_bar - q.c).sum(0)))
        coop = q.indirect(q.u0())
        other[gamma] = (np.linalg.norm(coop) / np.linalg.norm(RHO * q.lam), _rel(coop, limit))
    assert same[0.003] < 0.08 and 2.5 < same[0.01] / same[0.003] < 4.0 and same[0.3] > 0.5
    assert all(r > 3.0 for r, _ in other.values()) and other[0.003][1] < 0.02


def test_hgp_average_converges_to_exact_hypergradient_and_uncorrected_is_biased(problem):
    """Central claim (Sec. 4.3): over random directed realisations the mean of HGP's estimates
    tends to d_lam F_bar. Tolerance: 4 standard errors of the mean (shrinking as 1/sqrt(R))."""
    reps = 4000
    exact = problem.exact()
    est = problem.run(lambda up: hgp_weights(problem.p_bar, problem.avail.T, up), reps, seed=2)
    spread = np.sqrt(((est - est.mean(0)) ** 2).sum((1, 2)).mean()) / np.linalg.norm(exact)
    errors = {}
    for r in (40, 400, 4000):
        tol = 4 * spread / np.sqrt(r)
        errors[r] = _rel(est[:r].mean(0), exact)
        assert errors[r] < tol, (r, errors[r], tol)
    assert 4 * spread / np.sqrt(reps) < 0.03 and errors[4000] < 0.03
    # without 1/delta_bar: E[C_ij] = p_bar_{i->j} delta_bar_{j->i}, biased far beyond the noise
    ones = (problem.avail.T > 0).astype(float)
    plain = problem.run(lambda up: hgp_weights(problem.p_bar, ones, up), reps, seed=3)
    assert _rel(plain.mean(0), exact) > 10 * 4 * spread / np.sqrt(reps)


def test_hgp_stays_unbiased_at_20_percent_loss_with_delta_bar_measured_on_arrivals(problem):
    """u-messages are not push-sum mass (a lost u must not arrive later: the Neumann recursion
    would mix step indices), so loss is one more way for delta_{j->i} to be 0: with delta_bar
    the on-time arrival rate (link up and not lost, as EdgeStats measures it during SGP) the
    1/delta_bar correction keeps E[C] = P_bar^T. The target is unchanged: with running sums
    SGP's stationary equations use P_bar, the push weights over the realised links
    (docs/papers/pdbo.md). Tolerance: 4 standard errors of the mean."""
    reps, loss = 4000, 0.2
    exact = problem.exact()
    arrival = problem.avail.T * (1 - loss)
    est = problem.run(lambda up: hgp_weights(problem.p_bar, arrival, up), reps, seed=5, loss=loss)
    spread = np.sqrt(((est - est.mean(0)) ** 2).sum((1, 2)).mean()) / np.linalg.norm(exact)
    assert _rel(est.mean(0), exact) < 4 * spread / np.sqrt(reps) < 0.04
    # delta_bar of the links alone (loss ignored) under-weights every received u
    links_only = problem.run(lambda up: hgp_weights(problem.p_bar, problem.avail.T, up), reps,
                             seed=5, loss=loss)
    assert _rel(links_only.mean(0), exact) > 3 * 4 * spread / np.sqrt(reps)


def _capped_series(q: Quadratic) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (8)'s M-term series ``rho lam + J_lam^T sum_{m<M} (J_z^T)^m d_z F_bar`` of the capped SGP
    map ``psi(z, lam) = P_bar z - gamma kappa (A z / w - B lam - b)``, kappa_i = min(1, w_i /
    min_weight), from dense Jacobians read off psi column by column (psi is affine), with z* =
    psi(z*, lam) (eq. 5) solved densely: independent of HGP and of the class's closed form.
    Returns ``(series [N, K], z* [N, D])``."""
    kappa = np.minimum(1.0, q.w / q.min_weight)[:, None]

    def psi(z: np.ndarray, lam: np.ndarray) -> np.ndarray:
        z, lam = z.reshape(N, D), lam.reshape(N, K)
        grad = (np.einsum("nab,nb->na", q.A, z / q.w[:, None])
                - np.einsum("ndk,nk->nd", q.B, lam) - q.b)
        return (q.p_bar @ z - q.gamma * kappa * grad).ravel()

    z0, l0 = np.zeros(N * D), np.zeros(N * K)
    jz = np.stack([psi(e, l0) - psi(z0, l0) for e in np.eye(N * D)], 1)
    jl = np.stack([psi(z0, e) - psi(z0, l0) for e in np.eye(N * K)], 1)
    z = np.linalg.solve(np.eye(N * D) - jz, psi(z0, q.lam.ravel())).reshape(N, D)
    u = ((z / q.w[:, None] - q.c) / q.w[:, None]).ravel()
    series = RHO * q.lam.ravel()
    for _ in range(M):
        series, u = series + jl.T @ u, jz.T @ u
    return series.reshape(N, K), z


def test_hgp_expectation_is_the_series_of_the_capped_inner_map():
    """Where w_i < min_weight SGP applies agent i's local step times kappa_i = w_i / min_weight
    (:meth:`PushSum.step_scale`), so the map HGP differentiates is ``psi_i = sum_j p_{j->i} z_j -
    gamma kappa_i grad_x f_i(z_i / w_i, lambda_i)`` and kappa_i enters both Jacobians of eq. (8):
    the u-step's ``d_z psi`` and the v-step's ``d_lambda psi``. Instance: links into agent 0 are up
    with probability 0.05, so w_0* = 0.10 < min_weight 0.5 (kappa_0 = 0.20; the others are not
    capped). E[C] = P_bar^T (eq. 12) and C^(m) is independent of u^(m), so HGP's expectation is
    HGP run on E[C]: it equals the capped map's series to 1e-10 (a v-step without kappa_0 made
    agent 0's cooperative part 1 / kappa_0 = 4.9 times too large: 3.7 relative error, the others
    exact); the mean of 4,000 sampled runs is 0.5% off, within 4 standard errors (3.3%)."""
    avail = _avail()
    avail[:, 0] = 0.05
    np.fill_diagonal(avail, 0.0)
    q = Quadratic(avail, min_weight=0.5)
    assert q.w[0] < 0.12 and q.w[1:].min() > 0.5 and q.radius < 0.8
    series, z = _capped_series(q)
    np.testing.assert_allclose(z, q.z_star(q.lam), atol=1e-12)
    np.testing.assert_allclose(series, q.exact(), atol=1e-5)         # M terms ~ the closed form
    expected = q.run(lambda up: np.broadcast_to(q.p_bar.T, up.shape), 1, seed=0)[0]
    np.testing.assert_allclose(expected, series, rtol=1e-10, atol=1e-12)
    est = q.run(lambda up: hgp_weights(q.p_bar, q.avail.T, up), 4000, seed=8)
    spread = np.sqrt(((est - est.mean(0)) ** 2).sum((1, 2)).mean()) / np.linalg.norm(series)
    assert _rel(est.mean(0), series) < 4 * spread / np.sqrt(len(est)) < 0.05


def test_naive_srb_needs_reverse_edges_and_is_biased_on_directed_links(problem):
    """Sec. 4.2: agent i needs u_j over j -> i for each j it pushed to. On directed realisations
    such terms are missing; on undirected ones SRB is computable and unbiased; forming SRB from
    whatever arrived on directed links is biased."""
    rng = np.random.default_rng(4)
    up = (rng.random((200, N, N)) < problem.avail.T) & ~np.eye(N, dtype=bool)
    _, missing = srb_naive_weights(_push(up), up)
    assert missing.any(axis=(1, 2)).mean() > 0.9
    np.testing.assert_array_equal(missing, up.swapaxes(1, 2) & ~up)
    exact = problem.exact()
    dropped = problem.run(lambda u: srb_naive_weights(_push(u), u)[0], 4000, seed=5)
    assert _rel(dropped.mean(0), exact) > 0.2

    sym = Quadratic(_avail(symmetric=True))
    up = (rng.random((200, N, N)) < sym.avail.T) & ~np.eye(N, dtype=bool)
    up = np.triu(up, 1) | np.swapaxes(np.triu(up, 1), 1, 2)
    assert not srb_naive_weights(_push(up), up)[1].any()
    srb = sym.run(lambda u: srb_naive_weights(_push(u), u)[0], 4000, seed=6, symmetric=True)
    assert _rel(srb.mean(0), sym.exact()) < 0.05


def test_expected_push_weights_match_monte_carlo():
    rng = np.random.default_rng(7)
    n = 6
    avail = rng.uniform(0.1, 0.9, (n, n)) * (rng.random((n, n)) < 0.7)
    np.fill_diagonal(avail, 0.0)
    p_bar = expected_push_weights(avail)
    np.testing.assert_allclose(p_bar.sum(0), 1.0, atol=1e-12)       # column stochastic
    assert np.all(p_bar[(avail.T == 0) & ~np.eye(n, dtype=bool)] == 0)
    draws = 20000
    mc = np.zeros((n, n))
    for _ in range(draws):
        mc += push_sum_weights((rng.random((n, n)) < avail).T)
    np.testing.assert_allclose(p_bar, mc / draws, atol=0.012)


def test_edge_stats_estimate_push_weights_and_arrival_rates():
    """EdgeStats on i.i.d. realisations tends to (expected_push_weights, availability^T)."""
    rng = np.random.default_rng(8)
    avail = _avail(seed=9)
    stats = EdgeStats(N)
    for _ in range(3000):
        up = (rng.random((N, N)) < avail).T
        stats.update(push_sum_weights(up), up, np.ones(N, bool))
    np.testing.assert_allclose(stats.p_bar(), expected_push_weights(avail), atol=0.02)
    np.testing.assert_allclose(stats.delta_bar(), avail.T, atol=0.04)


def test_hgp_weights_drop_a_peer_never_heard_from():
    p_bar = np.full((3, 3), 1 / 3)
    delta_bar = np.array([[0.0, 0.0, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    delivered = np.ones((3, 3), bool)
    c = hgp_weights(p_bar, delta_bar, delivered)
    assert np.isfinite(c).all()
    np.testing.assert_allclose(c[0], [1 / 3, 0.0, 2 / 3])                   # 1 dropped, 2 x2
    np.testing.assert_allclose(np.diag(c), 1 / 3)


def test_grad_vjp_gives_hessian_and_mixed_products_for_all_agents():
    """One reverse pass through per-agent gradients = the per-agent Hessian blocks."""
    gen = torch.Generator().manual_seed(0)
    n, d, k = 3, 4, 2
    W = torch.randn(n, d, k, generator=gen, dtype=torch.float64)
    x = torch.randn(n, d, generator=gen, dtype=torch.float64)
    lam = torch.randn(n, k, generator=gen, dtype=torch.float64)
    u = torch.randn(n, d, generator=gen, dtype=torch.float64)

    def loss(xx, ll):       # a non-quadratic per-agent loss coupling x and lambda
        logits = torch.einsum("nd,ndk,nk->n", xx, W, ll)
        return (torch.log1p(torch.exp(logits)) + xx.pow(4).sum(1)).sum()

    hvp, mixed = grad_vjp(loss, x, lam, u)
    for i in range(n):
        def fi(xi, li, i=i):
            xx, ll = x.clone(), lam.clone()
            xx[i], ll[i] = xi, li
            return loss(xx, ll)
        (hxx, hxl), _ = torch.autograd.functional.hessian(fi, (x[i], lam[i]))
        torch.testing.assert_close(hvp[i], hxx @ u[i])
        torch.testing.assert_close(mixed[i], hxl.T @ u[i])
