"""Iterative LQR over torqued, the solver the examples share (reach.py, base_shift.py).

The solver is iterative LQR (Li & Todorov 2004) in the form Crocoddyl's DDP uses (Mastalli et al.
2020): a backward pass on the dynamics' linearization along the current trajectory, with
Levenberg-Marquardt regularization of Q_uu, and a forward pass under the feedback gains with a
backtracking line search. torqued gives the dynamics: one Linearize call for a whole horizon's
Fx and Fu (the backward pass) and one per knot for the steps of the forward pass. The state
x = (q, v) has 2 nv tangent coordinates, dq (q (+) dq on the configuration manifold) then dv, as
Linearize's Jacobians have them; a problem says how to take q1 (-) q0 for the feedback.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

import torqued


class Problem(Protocol):
    """What the solver asks of a trajectory optimization problem over K knots."""

    nv: int

    def linearize(self, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> torqued.Linearization:
        """The step and its Jacobians at each of the K knots (rows of q, v, u)."""

    def step(self, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One step from one knot: (q+, v+)."""

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """The tangent vector dq (nv) with q0 (+) dq = q1."""

    def running(
        self, q: np.ndarray, v: np.ndarray, u: np.ndarray
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The running cost summed over the K knots, and per knot its gradients lx (K, 2nv),
        lu (K, nu) and Hessians lxx (K, 2nv, 2nv), luu (K, nu, nu)."""

    def terminal(self, q: np.ndarray, v: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """The terminal cost at the last state, its gradient (2nv) and Hessian (2nv, 2nv)."""


@dataclass
class Result:
    q: np.ndarray  # (K + 1, nq)
    v: np.ndarray  # (K + 1, nv)
    u: np.ndarray  # (K, nu)
    costs: list[float]  # the cost before the first iteration and after each


def cost(problem: Problem, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> float:
    return problem.running(q[:-1], v[:-1], u)[0] + problem.terminal(q[-1], v[-1])[0]


def backward_pass(
    problem: Problem, q: np.ndarray, v: np.ndarray, u: np.ndarray, mu: float
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Feedforward terms k (K, nu), gains K (K, nu, nx) and the expected cost reduction of a
    full step; None when Q_uu is not positive definite under the regularization mu."""
    knots, nu = u.shape
    lin = problem.linearize(q[:-1], v[:-1], u)
    _, lx, lu, lxx, luu = problem.running(q[:-1], v[:-1], u)
    _, vx, vxx = problem.terminal(q[-1], v[-1])
    nx = vx.shape[0]
    feedforward, gains = np.zeros((knots, nu)), np.zeros((knots, nu, nx))
    expected = 0.0
    for k in reversed(range(knots)):
        fx, fu = lin.fx[k], lin.fu[k]
        qx = lx[k] + fx.T @ vx
        qu = lu[k] + fu.T @ vx
        qxx = lxx[k] + fx.T @ vxx @ fx
        quu = luu[k] + fu.T @ vxx @ fu
        qux = fu.T @ vxx @ fx
        try:
            factor = np.linalg.cholesky(quu + mu * np.eye(nu))
        except np.linalg.LinAlgError:
            return None

        def solve(b: np.ndarray) -> np.ndarray:
            return np.linalg.solve(factor.T, np.linalg.solve(factor, b))

        feedforward[k] = -solve(qu)
        gains[k] = -solve(qux)
        kk, gk = feedforward[k], gains[k]
        vx = qx + gk.T @ quu @ kk + gk.T @ qu + qux.T @ kk
        vxx = qxx + gk.T @ quu @ gk + gk.T @ qux + qux.T @ gk
        vxx = 0.5 * (vxx + vxx.T)
        expected += kk @ qu + 0.5 * kk @ quu @ kk
    return feedforward, gains, expected


def forward_pass(
    problem: Problem,
    q: np.ndarray,
    v: np.ndarray,
    u: np.ndarray,
    feedforward: np.ndarray,
    gains: np.ndarray,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The trajectory under u_k + alpha k_k + K_k (x_k (-) x_k-bar), from the same start."""
    new_q, new_v, new_u = q.copy(), v.copy(), u.copy()
    for k in range(u.shape[0]):
        dx = np.concatenate([problem.difference(q[k], new_q[k]), new_v[k] - v[k]])
        new_u[k] = u[k] + alpha * feedforward[k] + gains[k] @ dx
        new_q[k + 1], new_v[k + 1] = problem.step(new_q[k], new_v[k], new_u[k])
    return new_q, new_v, new_u


def solve(
    problem: Problem,
    q0: np.ndarray,
    v0: np.ndarray,
    u: np.ndarray,
    iterations: int,
    log: Callable[[int, float], None],
) -> Result:
    """iLQR from the controls u (K, nu) rolled out from (q0, v0); log(iteration, cost) after the
    rollout and after each iteration. Stops when a full step would gain less than a millionth of
    the cost."""
    knots = u.shape[0]
    q = np.zeros((knots + 1, q0.shape[0]))
    v = np.zeros((knots + 1, v0.shape[0]))
    q[0], v[0] = q0, v0
    for k in range(knots):
        q[k + 1], v[k + 1] = problem.step(q[k], v[k], u[k])
    current = cost(problem, q, v, u)
    costs, mu = [current], 1e-6
    log(0, current)
    for iteration in range(1, iterations + 1):
        result = backward_pass(problem, q, v, u, mu)
        if result is None:
            mu = max(mu * 10, 1e-6)
            continue
        feedforward, gains, expected = result
        accepted = False
        for alpha in (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125):
            new_q, new_v, new_u = forward_pass(problem, q, v, u, feedforward, gains, alpha)
            new_cost = cost(problem, new_q, new_v, new_u)
            if new_cost < current - 1e-4 * alpha * abs(expected):
                q, v, u, current, accepted = new_q, new_v, new_u, new_cost, True
                break
        mu = max(mu / 10, 1e-9) if accepted else mu * 10
        costs.append(current)
        log(iteration, current)
        if accepted and abs(expected) < 1e-6 * current:
            break
    return Result(q, v, u, costs)


def quadratic_running(
    v: np.ndarray, u: np.ndarray, u_ref: np.ndarray, w_u: float, w_v: float
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """0.5 w_u |u - u_ref|^2 + 0.5 w_v |v|^2 per knot, as Problem.running returns it."""
    knots, nv = v.shape
    nu = u.shape[1]
    du = u - u_ref
    value = 0.5 * w_u * float(np.sum(du * du)) + 0.5 * w_v * float(np.sum(v * v))
    lx = np.concatenate([np.zeros((knots, nv)), w_v * v], axis=1)
    lxx = np.zeros((knots, 2 * nv, 2 * nv))
    lxx[:, nv:, nv:] = w_v * np.eye(nv)
    luu = np.broadcast_to(w_u * np.eye(nu), (knots, nu, nu))
    return value, lx, w_u * du, lxx, luu


def plot(costs: list[float], title: str, path: str) -> None:
    """The cost per iteration, log scale, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    axes.semilogy(range(len(costs)), costs, marker="o")
    axes.set_xlabel("iteration")
    axes.set_ylabel("cost")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
