#!/usr/bin/env python3
"""Bringing one's own solver to torqued: iterative LQR over Linearize and Rollout, on the arm reach
that reach.py solves on the server with ControlService.Solve.

    python3 ilqr.py [--server localhost:50051] [reach.py's options]

The solver is iterative LQR (Li & Todorov 2004) in the form Crocoddyl's DDP uses (Mastalli et al.
2020): a backward pass on the dynamics' linearization along the current trajectory, with
Levenberg-Marquardt regularization of Q_uu, and a forward pass under the feedback gains with a
backtracking line search. torqued gives the dynamics in two calls per iteration. One Rollout
call tries every step size of the line search, each a rollout u_k + alpha k_k + K_k (x_k (-)
xbar_k) about the current trajectory, the server taking the tangent-space difference (-) and
returning the states and the frames the costs need. One Linearize call then gives the accepted
trajectory's Fx and Fu for the next backward pass: the Jacobians of one rollout, not of all six
(on a robot of talos_reduced's size those of six rollouts would cost 15 times the states alone;
docs/benchmarks.md). The state x = (q, v) has 2 nv tangent coordinates, dq (q (+) dq on the
configuration manifold) then dv, as Linearize's Jacobians and Rollout's feedback have them.

The client computes the costs and runs the backward pass, so that every iteration ships the
horizon's Jacobians over the wire: Solve, which does all of it on the server, takes a fraction
of the time (docs/benchmarks.md, "Optimal control over the wire"). This is the way for a solver
or a cost that Solve does not have. The reach's cost is reach.py's, with the torques regularized
about the gravity compensation of the start (a constant: the client has no g(q) per knot without
another call), its gradients from Kinematics' frame Jacobians (Gauss-Newton).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

import numpy as np

import torqued

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures  # noqa: E402 (beside this script)
import reach  # noqa: E402 (beside this script)

# The line search's step sizes, all tried in one call; the largest that decreases the cost enough
# is taken.
ALPHAS = np.array([1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125])


class Problem(Protocol):
    """What the solver asks of a trajectory optimization problem over K knots."""

    nv: int

    def rollout(
        self,
        q0: np.ndarray,
        v0: np.ndarray,
        u: np.ndarray,
        nominal: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]],
    ) -> torqued.Rollouts:
        """Rollouts from x0 (q0 (R, nq), v0 (R, nv)) under u (R, K, nu), with the feedback
        nominal = (q (K, nq), v (K, nv), gains (K, nu, 2 nv)) or open loop, with the frames
        terminal() reads."""

    def linearize(
        self, q: np.ndarray, v: np.ndarray, u: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Fx (K, 2 nv, 2 nv) and Fu (K, 2 nv, nu) of the steps from the knots (q (K, nq),
        v (K, nv)) under u (K, nu): the step rollout() takes."""

    def running(
        self, q: np.ndarray, v: np.ndarray, u: np.ndarray
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The running cost summed over the K knots, and per knot its gradients lx (K, 2nv),
        lu (K, nu) and Hessians lxx (K, 2nv, 2nv), luu (K, nu, nu)."""

    def terminal(self, out: torqued.Rollouts, r: int) -> tuple[float, np.ndarray, np.ndarray]:
        """The terminal cost at rollout r's last state, its gradient (2nv) and Hessian."""


@dataclass
class Trajectory:
    """One rollout: its states, controls and linearization."""

    q: np.ndarray  # (K + 1, nq)
    v: np.ndarray  # (K + 1, nv)
    u: np.ndarray  # (K, nu), as applied
    fx: np.ndarray  # (K, 2 nv, 2 nv)
    fu: np.ndarray  # (K, 2 nv, nu)
    cost: float
    terminal: tuple[float, np.ndarray, np.ndarray]

    @staticmethod
    def of(problem: Problem, out: torqued.Rollouts, r: int) -> "Trajectory":
        """Rollout r of `out`, its cost, and Fx and Fu still to come (linearized())."""
        terminal = problem.terminal(out, r)
        running = problem.running(out.q[r, :-1], out.v[r, :-1], out.u[r])[0]
        return Trajectory(
            out.q[r], out.v[r], out.u[r], np.empty(0), np.empty(0), running + terminal[0], terminal
        )

    def linearized(self, problem: Problem) -> "Trajectory":
        self.fx, self.fu = problem.linearize(self.q[:-1], self.v[:-1], self.u)
        return self


@dataclass
class Result:
    q: np.ndarray  # (K + 1, nq)
    v: np.ndarray  # (K + 1, nv)
    u: np.ndarray  # (K, nu)
    costs: list[float]  # the cost before the first iteration and after each
    calls: int  # the calls made, Rollout and Linearize


def feedback(nominal: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict:
    """Client.rollout's feedback arguments for a nominal (q, v, gains); none for open loop."""
    if nominal is None:
        return {}
    q, v, gains = nominal
    return {"q_nominal": q, "v_nominal": v, "feedback": gains}


def backward_pass(
    problem: Problem, t: Trajectory, mu: float
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Feedforward terms k (K, nu), gains K (K, nu, nx) and the expected cost reduction of a
    full step; None when Q_uu is not positive definite under the regularization mu."""
    knots, nu = t.u.shape
    _, lx, lu, lxx, luu = problem.running(t.q[:-1], t.v[:-1], t.u)
    _, vx, vxx = t.terminal
    nx = vx.shape[0]
    feedforward, gains = np.zeros((knots, nu)), np.zeros((knots, nu, nx))
    expected = 0.0
    for k in reversed(range(knots)):
        fx, fu = t.fx[k], t.fu[k]
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


def solve(
    problem: Problem,
    q0: np.ndarray,
    v0: np.ndarray,
    u: np.ndarray,
    iterations: int,
    log: Callable[[int, float], None],
) -> Result:
    """iLQR from the controls u (K, nu) rolled out from (q0, v0); log(iteration, cost) after the
    first rollout and after each iteration. Stops when a full step would gain less than a
    millionth of the cost."""
    first = problem.rollout(q0[None], v0[None], u[None], None)
    if first.errors[0]:
        raise RuntimeError(f"the initial controls: {first.errors[0]}")
    t = Trajectory.of(problem, first, 0).linearized(problem)
    costs, mu, calls = [t.cost], 1e-6, 2
    log(0, t.cost)
    starts_q, starts_v = np.tile(q0, (len(ALPHAS), 1)), np.tile(v0, (len(ALPHAS), 1))
    for iteration in range(1, iterations + 1):
        result = backward_pass(problem, t, mu)
        if result is None:
            mu = max(mu * 10, 1e-6)
            continue
        feedforward, gains, expected = result
        # Every step size at once, about the current trajectory.
        candidates = t.u[None] + ALPHAS[:, None, None] * feedforward[None]
        out = problem.rollout(starts_q, starts_v, candidates, (t.q[:-1], t.v[:-1], gains))
        calls += 1
        accepted = False
        for r, alpha in enumerate(ALPHAS):
            if out.steps[r] < len(t.u):  # diverged: a smaller step may hold
                continue
            candidate = Trajectory.of(problem, out, r)
            if candidate.cost < t.cost - 1e-4 * alpha * abs(expected):
                t, accepted = candidate.linearized(problem), True
                calls += 1
                break
        mu = max(mu / 10, 1e-9) if accepted else mu * 10
        costs.append(t.cost)
        log(iteration, t.cost)
        if accepted and abs(expected) < 1e-6 * t.cost:
            break
    return Result(t.q, t.v, t.u, costs, calls)


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


@dataclass
class Reach:
    """reach.py's task as this solver's Problem: the costs and their derivatives in the client,
    the end effector's position and Jacobian at the last state brought back by the rollouts."""

    client: torqued.Client
    model_id: str
    nv: int
    frame: str
    target: np.ndarray
    dt: float
    u_ref: np.ndarray
    w_u: float = reach.W_U
    w_v: float = reach.W_V
    w_p: float = reach.W_P

    def end_effector(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position (3,) and its Jacobian (3, nv) in world axes."""
        frames = self.client.kinematics(
            self.model_id, q, frames=[self.frame], reference="local_world_aligned", jacobians=True
        )
        return frames.positions[0], frames.jacobians[0, :3, :]

    def rollout(
        self,
        q0: np.ndarray,
        v0: np.ndarray,
        u: np.ndarray,
        nominal: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    ) -> torqued.Rollouts:
        return self.client.rollout(
            self.model_id,
            q0,
            v0,
            u,
            dt=self.dt,
            **feedback(nominal),
            frames=[self.frame],
            frame_jacobians=True,
            reference="local_world_aligned",
        )

    def linearize(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        out = self.client.linearize(self.model_id, q, v, u, dt=self.dt)
        return out.fx, out.fu

    def running(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        return quadratic_running(v, u, self.u_ref, self.w_u, self.w_v)

    def terminal(self, out: torqued.Rollouts, r: int) -> tuple[float, np.ndarray, np.ndarray]:
        position = out.frame_positions[r, -1, 0]
        jacobian = out.frame_jacobians[r, -1, 0, :3, :]
        v = out.v[r, -1]
        error = position - self.target
        nv = self.nv
        value = 0.5 * self.w_p * error @ error + 0.5 * self.w_v * v @ v
        # The gradient and Gauss-Newton Hessian.
        vx = np.concatenate([self.w_p * jacobian.T @ error, self.w_v * v])
        vxx = np.zeros((2 * nv, 2 * nv))
        vxx[:nv, :nv] = self.w_p * jacobian.T @ jacobian
        vxx[nv:, nv:] = self.w_v * np.eye(nv)
        return float(value), vx, vxx


def main(argv: list[str] | None = None) -> int:
    ap = reach.options(__doc__.splitlines()[0])
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        model, q0 = reach.arm(client, ap, a)
        problem = Reach(
            client=client,
            model_id=model.id,
            nv=model.nv,
            frame=a.frame,
            target=a.target,
            dt=a.dt,
            u_ref=client.gravity(model.id, q0),
        )

        def log(iteration: int, value: float) -> None:
            print(f"iteration {iteration:2d}  cost {value:12.6g}")

        start = time.monotonic()
        u = np.tile(problem.u_ref, (a.knots, 1))
        result = solve(problem, q0, np.zeros(model.nv), u, a.iterations, log)
        distance = float(np.linalg.norm(problem.end_effector(result.q[-1])[0] - problem.target))
        print(
            f"{len(result.costs) - 1} iterations ({result.calls} calls) in "
            f"{time.monotonic() - start:.2f} s; the end effector ends {distance * 1e3:.3f} mm "
            "from the target"
        )
    if a.plot:
        figures.costs(result.costs, "iLQR over torqued: reach", a.plot)
    return 0 if distance <= a.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
