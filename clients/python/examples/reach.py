#!/usr/bin/env python3
"""iLQR over torqued: a manipulator's end effector to a target point, from a cold start.

    python3 reach.py [--server localhost:50051]
                     [--model ../../../deploy/models/stanford_arm.dh.txtpb]
                     [--frame link6] [--target=0.15,0.25,0.1] [--q0=0,0,0.2,0,0,0]
                     [--knots 50] [--dt 0.02] [--plot reach.png]

Any fixed-base arm: --model is a model file as robots.py reads it (URDF, MJCF, SDF with their
NAME.options.txtpb, or a RegisterModelRequest in NAME.txtpb), --frame its end effector,
--q0 the configuration it starts from at rest (zeros if not given) and --target the point, in
world coordinates, metres (give a value that starts with a minus sign as --target=-0.07,...).
The default is the Stanford arm of the repository's deploy/models/.

The solver is ilqr.py's: per iteration one Rollout call for the line search, which also returns
the end effector's position and Jacobian at the last state for the terminal cost, and one
Linearize call for the accepted trajectory. Every joint of the arm is actuated
(u = tau).

The cost: 0.5 w_u |u - g(q0)|^2 + 0.5 w_v |v|^2 per knot (g: gravity compensation at the start),
then 0.5 w_p |p(q_K) - target|^2 + 0.5 w_v |v_K|^2 at the end. The script prints the cost and
the end effector's distance to the target at each iteration, plots the cost (--plot) and exits
0 once the end effector ends within --tolerance of the target.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

import torqued

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ilqr  # noqa: E402 (beside this script)
import robots  # noqa: E402 (beside this script)


@dataclass
class Reach:
    client: torqued.Client
    model_id: str
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
            **ilqr.feedback(nominal),
            frames=[self.frame],
            frame_jacobians=True,
            reference="local_world_aligned",
        )

    def linearize(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        out = self.client.linearize(self.model_id, q, v, u, dt=self.dt)
        return out.fx, out.fu

    def running(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        return ilqr.quadratic_running(v, u, self.u_ref, self.w_u, self.w_v)

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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="localhost:50051")
    ap.add_argument("--model", default=str(robots.MODELS / "stanford_arm.dh.txtpb"))
    ap.add_argument("--frame", default="link6", help="the end effector")
    ap.add_argument("--target", type=robots.numbers(3), default="0.15,0.25,0.1", help="metres")
    ap.add_argument("--q0", type=robots.numbers(), default=None, help="the start; zeros if none")
    ap.add_argument("--knots", type=int, default=50)
    ap.add_argument("--dt", type=float, default=0.02)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--tolerance", type=float, default=1e-3, help="metres")
    ap.add_argument("--plot", default="", help="PNG of the cost per iteration")
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        model = robots.register(client, a.model)
        q0 = np.zeros(model.nq) if a.q0 is None else a.q0
        if len(q0) != model.nq:
            ap.error(f"--q0: {model.name} has {model.nq} coordinates, got {len(q0)}")
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
        result = ilqr.solve(problem, q0, np.zeros(model.nv), u, a.iterations, log)
        distance = float(np.linalg.norm(problem.end_effector(result.q[-1])[0] - problem.target))
        print(
            f"{len(result.costs) - 1} iterations ({result.calls} calls) in "
            f"{time.monotonic() - start:.2f} s; the end effector ends {distance * 1e3:.3f} mm "
            "from the target"
        )
    if a.plot:
        ilqr.plot(result.costs, "iLQR over torqued: reach", a.plot)
    return 0 if distance <= a.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
