#!/usr/bin/env python3
"""iLQR over torqued: a quadruped shifts its base while its four feet stay in rigid contact.

    python3 base_shift.py [--server localhost:50051]
                          [--urdf ../../../../shared/models/solo12.urdf]
                          [--shift 0.04,0.03,-0.03] [--knots 40] [--dt 0.025]
                          [--plot base_shift.png]

solo12 stands on its four feet (knees bent, feet on z = 0). Each foot is a rigid 3D contact with
the ground (Linearize's constraints: CONSTRAINT_TYPE_POINT at the *_FOOT frames, to the world),
the free-flyer base is unactuated (u = tau of the 12 leg joints) and the solver is ilqr.py's,
the state difference taken on the free-flyer's SE(3) (log6 of M0^-1 M1, as torqued's tangent
space has it). The cost: 0.5 w_u |u - u0|^2 + 0.5 w_v |v|^2 per knot (u0: the torques that hold
the stance), then 0.5 w_p |p_base - target|^2 + 0.5 w_r |log(R_base R0^T)|^2 + 0.5 w_v |v_K|^2.

It prints the cost per iteration, the base's distance to its target, and how far each foot moved
from where it stood. The contacts hold the feet at the acceleration level (each knot's foot
accelerations are zero, Crocoddyl's contact dynamics without Baumgarte's stabilization), so the
discrete steps let the feet drift by O(dt): about 0.3 mm over this default horizon. It plots the
cost (--plot) and exits 0 when the base ends within --tolerance of its target with the feet
within --drift of where they stood.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import torqued

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ilqr  # noqa: E402 (beside this script)

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_SOLO12 = os.path.join(HERE, "..", "..", "..", "..", "shared", "models", "solo12.urdf")
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
BASE = "base_link"


def skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def rotation(quaternion: np.ndarray) -> np.ndarray:
    """The rotation of a unit quaternion stored (x, y, z, w)."""
    x, y, z, w = quaternion
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def log3(r: np.ndarray) -> np.ndarray:
    """The rotation vector of r."""
    cosine = np.clip((np.trace(r) - 1) / 2, -1.0, 1.0)
    theta = np.arccos(cosine)
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if theta < 1e-8:
        return 0.5 * axis
    return theta / (2 * np.sin(theta)) * axis


def log6(r: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The twist [linear; angular] whose exponential is the transform (r, p)."""
    w = log3(r)
    theta = np.linalg.norm(w)
    a = skew(w)
    if theta < 1e-8:
        v_inverse = np.eye(3) - 0.5 * a + a @ a / 12
    else:
        c = (1 - theta * np.sin(theta) / (2 * (1 - np.cos(theta)))) / theta**2
        v_inverse = np.eye(3) - 0.5 * a + c * a @ a
    return np.concatenate([v_inverse @ p, w])


@dataclass
class BaseShift:
    client: torqued.Client
    model_id: str
    nv: int
    dt: float
    target: np.ndarray  # the base's position
    rotation0: np.ndarray  # the base's orientation to keep
    u_ref: np.ndarray = field(default_factory=lambda: np.zeros(0))
    w_u: float = 1e-3
    w_v: float = 1e-1
    w_p: float = 1e5
    w_r: float = 1e4

    @property
    def contacts(self) -> list[dict]:
        return [{"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": foot}} for foot in FEET]

    def linearize(
        self, q: np.ndarray, v: np.ndarray, u: np.ndarray, continuous: bool = False
    ) -> torqued.Linearization:
        return self.client.linearize(
            self.model_id,
            q,
            v,
            u,
            dt=self.dt,
            actuation="unactuated_root",
            constraints=self.contacts,
            continuous_derivatives=continuous,
        )

    def step(self, q: np.ndarray, v: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = self.linearize(q, v, u)
        return out.q_next, out.v_next

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        r0, r1 = rotation(q0[3:7]), rotation(q1[3:7])
        base = log6(r0.T @ r1, r0.T @ (q1[:3] - q0[:3]))
        return np.concatenate([base, q1[7:] - q0[7:]])

    def running(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        return ilqr.quadratic_running(v, u, self.u_ref, self.w_u, self.w_v)

    def base(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The base's position, orientation error (world axes) and their Jacobian (6, nv)."""
        frames = self.client.kinematics(
            self.model_id, q, frames=[BASE], reference="local_world_aligned", jacobians=True
        )
        error = log3(frames.rotations[0] @ self.rotation0.T)
        return frames.positions[0], error, frames.jacobians[0]

    def terminal(self, q: np.ndarray, v: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        position, turn, jacobian = self.base(q)
        error = position - self.target
        nv = self.nv
        value = 0.5 * self.w_p * error @ error + 0.5 * self.w_r * turn @ turn
        value += 0.5 * self.w_v * v @ v
        weights = np.concatenate([np.full(3, self.w_p), np.full(3, self.w_r)])
        residual = np.concatenate([error, turn])
        # The gradient and Gauss-Newton Hessian, the turn's Jacobian taken as the angular rows.
        vx = np.concatenate([jacobian.T @ (weights * residual), self.w_v * v])
        vxx = np.zeros((2 * nv, 2 * nv))
        vxx[:nv, :nv] = jacobian.T @ (weights[:, None] * jacobian)
        vxx[nv:, nv:] = self.w_v * np.eye(nv)
        return float(value), vx, vxx

    def holding_torques(self, q: np.ndarray) -> np.ndarray:
        """The leg torques that hold q at rest on the feet: a = a0 + (da/dtau) B u is affine in u,
        so its least-squares zero is one solve."""
        zero_v, zero_u = np.zeros(self.nv), np.zeros(self.nv - 6)
        out = self.linearize(q, zero_v, zero_u, continuous=True)
        a0 = out.v_next / self.dt
        return np.linalg.lstsq(out.da_dtau[:, 6:], -a0, rcond=None)[0]

    def feet_drift(self, q: np.ndarray) -> float:
        """The largest distance a foot moved from where it stood at the first knot, metres."""
        feet = self.client.kinematics(self.model_id, q, frames=list(FEET)).positions
        return float(np.max(np.linalg.norm(feet - feet[0], axis=-1)))


def standing(client: torqued.Client, model_id: str, nq: int) -> np.ndarray:
    """Knees bent (example-robot-data's pose), the base lowered until the feet touch z = 0."""
    q = np.zeros(nq)
    q[6] = 1.0  # the identity quaternion (x, y, z, w)
    q[7:] = [0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6]
    feet = client.kinematics(model_id, q, frames=list(FEET)).positions
    q[2] -= feet[:, 2].min()
    return q


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="localhost:50051")
    ap.add_argument("--urdf", default=SHARED_SOLO12)
    ap.add_argument("--shift", default="0.04,0.03,-0.03", help="of the base, metres")
    ap.add_argument("--knots", type=int, default=40)
    ap.add_argument("--dt", type=float, default=0.025)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--tolerance", type=float, default=1e-3, help="metres")
    ap.add_argument("--drift", type=float, default=1e-3, help="the feet's, metres")
    ap.add_argument("--plot", default="", help="PNG of the cost per iteration")
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        model = client.register(urdf=pathlib.Path(a.urdf), floating_base=True)
        q0 = standing(client, model.id, model.nq)
        shift = np.array([float(x) for x in a.shift.split(",")])
        problem = BaseShift(
            client=client,
            model_id=model.id,
            nv=model.nv,
            dt=a.dt,
            target=q0[:3] + shift,
            rotation0=rotation(q0[3:7]),
        )
        problem.u_ref = problem.holding_torques(q0)

        def log(iteration: int, value: float) -> None:
            print(f"iteration {iteration:2d}  cost {value:12.6g}")

        start = time.monotonic()
        u = np.tile(problem.u_ref, (a.knots, 1))
        result = ilqr.solve(problem, q0, np.zeros(model.nv), u, a.iterations, log)
        distance = float(np.linalg.norm(problem.base(result.q[-1])[0] - problem.target))
        drift = problem.feet_drift(result.q)
        print(
            f"{len(result.costs) - 1} iterations in {time.monotonic() - start:.2f} s; the base "
            f"ends {distance * 1e3:.3f} mm from its target, the feet within {drift:.2e} m of "
            "where they stood"
        )
    if a.plot:
        ilqr.plot(result.costs, "iLQR over torqued: base shift in contact", a.plot)
    return 0 if distance <= a.tolerance and drift <= a.drift else 1


if __name__ == "__main__":
    sys.exit(main())
