#!/usr/bin/env python3
"""iLQR over torqued: a manipulator's end effector to a target point, from a cold start.

    python3 reach.py [--server localhost:50051] [--urdf ../../../../shared/models/ur5.urdf]
                     [--frame tool0] [--target 0.3,0.3,0.4] [--knots 50] [--dt 0.02]
                     [--plot reach.png]

The solver is iterative LQR (Li & Todorov 2004) in the form Crocoddyl's DDP uses (Mastalli et al.
2020): a backward pass on the dynamics' linearization along the current trajectory, with
Levenberg-Marquardt regularization of Q_uu, and a forward pass under the feedback gains with a
backtracking line search. torqued gives the dynamics: one Linearize call for a whole horizon's
Fx and Fu (the backward pass), one per knot for the steps of the forward pass, and one
Kinematics call for the end effector's position and Jacobian (the cost). Every joint of the arm
is actuated (u = tau) and its configuration space is a vector space, so x (+) dx = x + dx.

The cost: 0.5 w_u |u - g(q0)|^2 + 0.5 w_v |v|^2 per knot (g: gravity compensation at the start),
then 0.5 w_p |p(q_K) - target|^2 + 0.5 w_v |v_K|^2 at the end. The script prints the cost and
the end effector's distance to the target at each iteration, plots the cost (--plot) and exits
0 once the end effector ends within --tolerance of the target.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from dataclasses import dataclass

import numpy as np

import torqued

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_UR5 = os.path.join(HERE, "..", "..", "..", "..", "shared", "models", "ur5.urdf")


@dataclass
class Task:
    client: torqued.Client
    model_id: str
    nq: int
    nv: int
    frame: str
    target: np.ndarray
    dt: float
    u_ref: np.ndarray
    w_u: float = 1e-2
    w_v: float = 1e-1
    w_p: float = 1e5

    def end_effector(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position (3,) and its Jacobian (3, nv) in world axes."""
        frames = self.client.kinematics(
            self.model_id, q, frames=[self.frame], reference="local_world_aligned", jacobians=True
        )
        return frames.positions[0], frames.jacobians[0, :3, :]

    def cost(self, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> float:
        """Total cost of a trajectory: q, v (K + 1 rows), u (K rows)."""
        du = u - self.u_ref
        running = 0.5 * self.w_u * np.sum(du * du) + 0.5 * self.w_v * np.sum(v[:-1] ** 2)
        error = self.end_effector(q[-1])[0] - self.target
        return float(running + 0.5 * self.w_p * error @ error + 0.5 * self.w_v * v[-1] @ v[-1])

    def step(self, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One semi-implicit Euler step, as torqued takes it."""
        out = self.client.linearize(self.model_id, q, v, u, dt=self.dt)
        return out.q_next, out.v_next


def backward_pass(
    task: Task, q: np.ndarray, v: np.ndarray, u: np.ndarray, mu: float
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Feedforward terms k (K, nu), gains K (K, nu, nx) and the expected cost reduction of a
    full step; None when Q_uu is not positive definite under the regularization mu."""
    knots, nv = u.shape[0], task.nv
    nx, nu = 2 * nv, u.shape[1]
    lin = task.client.linearize(task.model_id, q[:-1], v[:-1], u, dt=task.dt)
    position, jacobian = task.end_effector(q[-1])
    error = position - task.target
    # The terminal cost's gradient and Gauss-Newton Hessian.
    vx = np.concatenate([task.w_p * jacobian.T @ error, task.w_v * v[-1]])
    vxx = np.zeros((nx, nx))
    vxx[:nv, :nv] = task.w_p * jacobian.T @ jacobian
    vxx[nv:, nv:] = task.w_v * np.eye(nv)
    feedforward, gains = np.zeros((knots, nu)), np.zeros((knots, nu, nx))
    expected = 0.0
    for k in reversed(range(knots)):
        fx, fu = lin.fx[k], lin.fu[k]
        lx = np.concatenate([np.zeros(nv), task.w_v * v[k]])
        lu = task.w_u * (u[k] - task.u_ref)
        qx = lx + fx.T @ vx
        qu = lu + fu.T @ vx
        qxx = fx.T @ vxx @ fx
        qxx[nv:, nv:] += task.w_v * np.eye(nv)
        quu = task.w_u * np.eye(nu) + fu.T @ vxx @ fu
        qux = fu.T @ vxx @ fx
        try:
            factor = np.linalg.cholesky(quu + mu * np.eye(nu))
        except np.linalg.LinAlgError:
            return None
        solve = lambda b: np.linalg.solve(factor.T, np.linalg.solve(factor, b))  # noqa: E731
        feedforward[k] = -solve(qu)
        gains[k] = -solve(qux)
        kk, gk = feedforward[k], gains[k]
        vx = qx + gk.T @ quu @ kk + gk.T @ qu + qux.T @ kk
        vxx = qxx + gk.T @ quu @ gk + gk.T @ qux + qux.T @ gk
        vxx = 0.5 * (vxx + vxx.T)
        expected += kk @ qu + 0.5 * kk @ quu @ kk
    return feedforward, gains, expected


def forward_pass(
    task: Task,
    q: np.ndarray,
    v: np.ndarray,
    u: np.ndarray,
    feedforward: np.ndarray,
    gains: np.ndarray,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The trajectory under u_k = u_k + alpha k_k + K_k (x_k - x_k-bar), from the same start."""
    new_q, new_v, new_u = q.copy(), v.copy(), u.copy()
    for k in range(u.shape[0]):
        dx = np.concatenate([new_q[k] - q[k], new_v[k] - v[k]])
        new_u[k] = u[k] + alpha * feedforward[k] + gains[k] @ dx
        new_q[k + 1], new_v[k + 1] = task.step(new_q[k], new_v[k], new_u[k])
    return new_q, new_v, new_u


def solve(task: Task, q0: np.ndarray, knots: int, iterations: int, log=print) -> dict:
    """iLQR from u = g(q0) held; returns the trajectory and the cost of each iteration."""
    u = np.tile(task.u_ref, (knots, 1))
    q = np.zeros((knots + 1, task.nq))
    v = np.zeros((knots + 1, task.nv))
    q[0] = q0
    for k in range(knots):
        q[k + 1], v[k + 1] = task.step(q[k], v[k], u[k])
    cost = task.cost(q, v, u)
    costs, mu = [cost], 1e-6
    log(f"iteration  0  cost {cost:12.6g}")
    for iteration in range(1, iterations + 1):
        result = backward_pass(task, q, v, u, mu)
        if result is None:
            mu = max(mu * 10, 1e-6)
            continue
        feedforward, gains, expected = result
        accepted = False
        for alpha in (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125):
            new_q, new_v, new_u = forward_pass(task, q, v, u, feedforward, gains, alpha)
            new_cost = task.cost(new_q, new_v, new_u)
            if new_cost < cost - 1e-4 * alpha * abs(expected):
                q, v, u, cost, accepted = new_q, new_v, new_u, new_cost, True
                break
        mu = max(mu / 10, 1e-9) if accepted else mu * 10
        costs.append(cost)
        distance = np.linalg.norm(task.end_effector(q[-1])[0] - task.target)
        log(f"iteration {iteration:2d}  cost {cost:12.6g}  distance {distance * 1e3:8.3f} mm")
        # Converged: a full step would gain less than a millionth of the cost.
        if accepted and abs(expected) < 1e-6 * cost:
            break
    distance = float(np.linalg.norm(task.end_effector(q[-1])[0] - task.target))
    return {"q": q, "v": v, "u": u, "costs": costs, "distance": distance}


def plot(costs: list[float], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    axes.semilogy(range(len(costs)), costs, marker="o")
    axes.set_xlabel("iteration")
    axes.set_ylabel("cost")
    axes.set_title("iLQR over torqued: reach")
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="localhost:50051")
    ap.add_argument("--urdf", default=SHARED_UR5)
    ap.add_argument("--frame", default="tool0")
    ap.add_argument("--target", default="0.3,0.3,0.4")
    ap.add_argument("--knots", type=int, default=50)
    ap.add_argument("--dt", type=float, default=0.02)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--tolerance", type=float, default=1e-3, help="metres")
    ap.add_argument("--plot", default="", help="PNG of the cost per iteration")
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        model = client.register(urdf=pathlib.Path(a.urdf))
        q0 = np.zeros(model.nq)
        task = Task(
            client=client,
            model_id=model.id,
            nq=model.nq,
            nv=model.nv,
            frame=a.frame,
            target=np.array([float(x) for x in a.target.split(",")]),
            dt=a.dt,
            u_ref=client.gravity(model.id, q0),
        )
        start = time.monotonic()
        result = solve(task, q0, a.knots, a.iterations)
        print(
            f"{len(result['costs']) - 1} iterations in {time.monotonic() - start:.2f} s; the end "
            f"effector ends {result['distance'] * 1e3:.3f} mm from the target"
        )
    if a.plot:
        plot(result["costs"], a.plot)
    return 0 if result["distance"] <= a.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
