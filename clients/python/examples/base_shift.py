#!/usr/bin/env python3
"""iLQR over torqued: a quadruped shifts its base while its four feet stay in rigid contact.

    python3 base_shift.py [--server localhost:50051]
                          [--model ../../../deploy/models/quadruped.urdf] [--base trunk]
                          [--feet FL_foot,FR_foot,HL_foot,HR_foot]
                          [--stance=0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4]
                          [--shift=0.04,0.03,-0.03] [--knots 125] [--dt 0.008]
                          [--gains deadbeat] [--plot base_shift.png]

Any legged robot on a floating base: --model is a model file as robots.py reads it (its first
joint a free flyer, e.g. from NAME.options.txtpb's base: BASE_TYPE_FLOATING), --base the frame
whose placement is steered, --feet the contact frames, --stance the joint coordinates after the
free flyer's 7 (zeros if not given) and --shift the base's displacement, metres (give a value that
starts with a minus sign as --shift=-0.02,...). The default is the quadruped of the repository's
deploy/models/.

The robot stands in --stance, its base lowered until the lowest foot touches z = 0. Each foot is
a rigid 3D contact with the ground (Rollout's constraints: CONSTRAINT_TYPE_POINT from the foot's
frame to the point of the world where it stands), the free-flyer base is unactuated (u = tau of
the other joints) and the solver is ilqr.py's, one Rollout and one Linearize call per iteration.
The cost: 0.5 w_u |u - u0|^2 + 0.5 w_v |v|^2 per knot (u0: the torques that hold the stance),
then 0.5 w_p |p_base - target|^2 + 0.5 w_r |log(R_base R0^T)|^2 + 0.5 w_v |v_K|^2, the base's
placement and Jacobian at the last state coming with the rollout.

The contacts hold the feet at the acceleration level, and a discrete step lets a foot move by
O(dt^2) of its curvature terms; without stabilization those errors add up over the horizon.
Baumgarte's gains pull them back: with the deadbeat pair K_p = 1/dt^2, K_d = 1/dt a semi-implicit
step removes a foot's position and velocity error within two steps, so that the residual stays at
one step's error, O(dt^2). The script prints the cost per iteration, the base's distance to its
target and the feet's largest distance from where they stood, plots the cost (--plot), and exits
0 when the base ends within --tolerance of its target with that residual within --residual.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import torqued
from torqued.v1 import model_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ilqr  # noqa: E402 (beside this script)
import robots  # noqa: E402 (beside this script)


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


@dataclass
class BaseShift:
    client: torqued.Client
    model_id: str
    nv: int
    dt: float
    target: np.ndarray  # the base's position
    rotation0: np.ndarray  # the base's orientation to keep
    footholds: np.ndarray  # (feet, 3): where the feet stand
    base_frame: str = "trunk"
    feet: list[str] = field(default_factory=list)
    u_ref: np.ndarray = field(default_factory=lambda: np.zeros(0))
    w_u: float = 1e-3
    w_v: float = 1e-1
    w_p: float = 1e6
    w_r: float = 1e5
    # Baumgarte's gains on the contacts; with the deadbeat pair (1/dt^2, 1/dt) a semi-implicit
    # step removes a foot's position and velocity error within two steps.
    position_gain: float = 0.0
    velocity_gain: float = 0.0

    @property
    def contacts(self) -> list[dict]:
        """Each foot held at the point of the ground where it stands (frame2: the world, placed
        there), the point Baumgarte's position gain pulls it back to."""
        return [
            {
                "type": "CONSTRAINT_TYPE_POINT",
                "frame1": {"frame": foot},
                "frame2": {"placement": {"xyz": dict(zip("xyz", map(float, point)))}},
            }
            for foot, point in zip(self.feet, self.footholds)
        ]

    @property
    def step(self) -> dict:
        """Linearize's and Rollout's step: the legs actuated, the feet held with the gains."""
        return {
            "dt": self.dt,
            "actuation": "unactuated_root",
            "constraints": self.contacts,
            "position_gain": self.position_gain,
            "velocity_gain": self.velocity_gain,
        }

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
            **self.step,
            **ilqr.feedback(nominal),
            frames=[self.base_frame, *self.feet],
            frame_jacobians=True,
            reference="local_world_aligned",
        )

    def linearize(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        out = self.client.linearize(self.model_id, q, v, u, **self.step)
        return out.fx, out.fu

    def running(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        return ilqr.quadratic_running(v, u, self.u_ref, self.w_u, self.w_v)

    def terminal(self, out: torqued.Rollouts, r: int) -> tuple[float, np.ndarray, np.ndarray]:
        position = out.frame_positions[r, -1, 0]
        turn = log3(out.frame_rotations[r, -1, 0] @ self.rotation0.T)
        jacobian = out.frame_jacobians[r, -1, 0]
        v = out.v[r, -1]
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
        out = self.client.linearize(
            self.model_id, q, zero_v, zero_u, **self.step, continuous_derivatives=True
        )
        a0 = out.v_next / self.dt
        return np.linalg.lstsq(out.da_dtau[:, 6:], -a0, rcond=None)[0]

    def base(self, q: np.ndarray) -> np.ndarray:
        """The base's position."""
        return self.client.kinematics(self.model_id, q, frames=[self.base_frame]).positions[0]

    def feet_residual(self, q: np.ndarray) -> float:
        """The feet's constraint residual over the trajectory: the largest distance a foot is from
        where it stood at the first knot, metres."""
        feet = self.client.kinematics(self.model_id, q, frames=self.feet).positions
        return float(np.max(np.linalg.norm(feet - feet[0], axis=-1)))


def standing(
    client: torqued.Client, model_id: str, nq: int, stance: np.ndarray, feet: list[str]
) -> np.ndarray:
    """The joints in `stance`, the base level and lowered until the lowest foot touches z = 0."""
    q = np.zeros(nq)
    q[6] = 1.0  # the identity quaternion (x, y, z, w)
    q[7:] = stance
    positions = client.kinematics(model_id, q, frames=feet).positions
    q[2] -= positions[:, 2].min()
    return q


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="localhost:50051")
    ap.add_argument("--model", default=str(robots.MODELS / "quadruped.urdf"))
    ap.add_argument("--base", default="trunk", help="the frame whose placement is steered")
    ap.add_argument("--feet", type=robots.names, default="FL_foot,FR_foot,HL_foot,HR_foot")
    ap.add_argument(
        "--stance",
        type=robots.numbers(),
        default="0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4",
        help="the joints after the free flyer; zeros if none",
    )
    ap.add_argument("--shift", type=robots.numbers(3), default="0.04,0.03,-0.03", help="metres")
    ap.add_argument("--knots", type=int, default=125)
    ap.add_argument("--dt", type=float, default=0.008)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--tolerance", type=float, default=1e-3, help="metres")
    ap.add_argument(
        "--residual", type=float, default=2e-6, help="the feet's constraint residual, metres"
    )
    ap.add_argument(
        "--gains",
        default="deadbeat",
        help="Baumgarte's K_p,K_d on the contacts; deadbeat: 1/dt^2,1/dt; 0,0: none",
    )
    ap.add_argument("--plot", default="", help="PNG of the cost per iteration")
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        model = robots.register(client, a.model)
        if not model.joints or model.joints[0].type != model_pb2.JOINT_TYPE_FREE_FLYER:
            ap.error(f"--model: {model.name}'s first joint is not a free flyer")
        if len(a.stance) != model.nq - 7:
            ap.error(f"--stance: {model.name} has {model.nq - 7} joint coordinates after its "
                     f"free flyer, got {len(a.stance)}")
        q0 = standing(client, model.id, model.nq, a.stance, a.feet)
        shift = a.shift
        gains = (
            (1 / a.dt**2, 1 / a.dt)
            if a.gains == "deadbeat"
            else tuple(float(x) for x in a.gains.split(","))
        )
        problem = BaseShift(
            client=client,
            model_id=model.id,
            nv=model.nv,
            dt=a.dt,
            target=q0[:3] + shift,
            rotation0=rotation(q0[3:7]),
            footholds=client.kinematics(model.id, q0, frames=a.feet).positions,
            base_frame=a.base,
            feet=a.feet,
            position_gain=gains[0],
            velocity_gain=gains[1],
        )
        problem.u_ref = problem.holding_torques(q0)

        def log(iteration: int, value: float) -> None:
            print(f"iteration {iteration:2d}  cost {value:12.6g}")

        start = time.monotonic()
        u = np.tile(problem.u_ref, (a.knots, 1))
        result = ilqr.solve(problem, q0, np.zeros(model.nv), u, a.iterations, log)
        distance = float(np.linalg.norm(problem.base(result.q[-1]) - problem.target))
        residual = problem.feet_residual(result.q)
        print(
            f"{len(result.costs) - 1} iterations ({result.calls} calls) in "
            f"{time.monotonic() - start:.2f} s; the base ends {distance * 1e3:.3f} mm from its "
            f"target, the feet within {residual:.2e} m of where they stood"
        )
    if a.plot:
        ilqr.plot(result.costs, "iLQR over torqued: base shift in contact", a.plot)
    return 0 if distance <= a.tolerance and residual <= a.residual else 1


if __name__ == "__main__":
    sys.exit(main())
