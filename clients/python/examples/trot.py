#!/usr/bin/env python3
"""iLQR over torqued: a quadruped trots forward, its diagonal feet swapping, through a contact
schedule.

    python3 trot.py [--server localhost:50051]
                    [--model ../../../deploy/models/quadruped.urdf] [--base trunk]
                    [--feet FL_foot,FR_foot,HL_foot,HR_foot]
                    [--stance=0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4]
                    [--cycles 2] [--step-knots 12] [--stand-knots 4] [--stride 0.11]
                    [--height 0.04] [--dt 0.01] [--plot trot.png]

--model is a legged robot on a floating base, as base_shift.py takes it, with four --feet in the
order front left, front right, hind left, hind right. The robot stands in --stance on its four
feet for --stand-knots knots, then trots for --cycles cycles: the front-left and hind-right feet
stand while the two others swing for --step-knots knots, then they swap; each swing takes its
foot --stride metres forward and --height up at mid-swing, and the base follows, --cycles x
--stride metres in all; then the four feet stand again for --stand-knots knots.

The schedule is one Rollout and one Linearize call per iteration of ilqr.py's solver, as
Crocoddyl builds a locomotion problem (Mastalli et al. 2020, §IV-B): a phase per support, each
foot a rigid 3D contact (CONSTRAINT_TYPE_POINT to the world, no anchor: the foot is held where it
lands) with deadbeat Baumgarte gains, and at each phase that adds feet their touchdown's impact
(plastic), whose derivatives are in the step's Jacobians. The cost, per knot: the base's distance
to its reference (its start moved forward at the trot's pace), its tilt, the joints' distance
to the stance, the velocities and the torques about those that hold the stance, and each swinging
foot's distance to its arc; the terminal cost holds the base at the end of its path, level and
at rest. Their gradients come from Kinematics' frame Jacobians (Gauss-Newton).

The script prints the cost per iteration, how far the base went and how far any stance foot
moved from its foothold; with --plot it draws the base's path and the feet's heights (PNG). It
exits 0 when the base went at least --advance metres forward with every stance foot within
--residual of its foothold.
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
from base_shift import log3, standing  # noqa: E402 (beside this script)

# The diagonal pairs of feet (indices in --feet): FL with HR, FR with HL.
DIAGONALS = ((0, 3), (1, 2))


@dataclass
class Gait:
    """The trot's timing: which feet stand at each knot, and the phases of the schedule."""

    stand_knots: int
    step_knots: int
    cycles: int

    @property
    def knots(self) -> int:
        return 2 * self.stand_knots + 2 * self.cycles * self.step_knots

    def stance(self, k: int) -> tuple[int, ...]:
        """The feet standing at knot k (k = knots: the last state, on the four feet)."""
        step = k - self.stand_knots
        if step < 0 or step >= 2 * self.cycles * self.step_knots:
            return (0, 1, 2, 3)
        return DIAGONALS[(step // self.step_knots) % 2]

    def first_knots(self) -> list[int]:
        """Each phase's first knot: the four feet, each half cycle, the four feet."""
        halves = [self.stand_knots + h * self.step_knots for h in range(2 * self.cycles)]
        return [0, *halves, self.stand_knots + 2 * self.cycles * self.step_knots]

    def swing(self, k: int, foot: int) -> tuple[int, int] | None:
        """The swing foot `foot` is in at knot k, as (its lift-off knot, its touchdown knot);
        None when it stands. The touchdown knot counts as in the swing: its state is where the
        foot lands."""
        for first in self.first_knots()[1:-1]:
            touchdown = first + self.step_knots
            if first < k <= touchdown and foot not in self.stance(first):
                return first, touchdown
        return None


@dataclass
class Trot:
    client: torqued.Client
    model_id: str
    nv: int
    nq: int
    dt: float
    gait: Gait
    q0: np.ndarray  # the stance
    footholds: np.ndarray  # (4, 3): where the feet stand at the start
    stride: float
    height: float
    base_frame: str = "trunk"
    feet: list[str] = field(default_factory=list)
    u_ref: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (K, nu)
    w_base: float = 1e4
    w_tilt: float = 1e4
    w_posture: float = 1e1
    w_v: float = 1e-1
    w_u: float = 1e-3
    w_foot: float = 1e5
    w_landing: float = 1e2  # the touchdown knot's share of w_foot
    position_gain: float = 0.0
    velocity_gain: float = 0.0

    @property
    def advance(self) -> float:
        return self.gait.cycles * self.stride

    @property
    def phases(self) -> list[tuple[int, list[dict]]]:
        """The schedule: each phase's first knot and its feet, held where they land."""
        return [
            (
                first,
                [
                    {"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": self.feet[f]}}
                    for f in self.gait.stance(first)
                ],
            )
            for first in self.gait.first_knots()
        ]

    @property
    def step(self) -> dict:
        """Linearize's and Rollout's step: the legs actuated, the feet held by the schedule."""
        return {
            "dt": self.dt,
            "actuation": "unactuated_root",
            "phases": self.phases,
            "position_gain": self.position_gain,
            "velocity_gain": self.velocity_gain,
        }

    def base_reference(self, k: int) -> np.ndarray:
        """The base's position at knot k: its start, moved forward at the trot's pace."""
        trotting = 2 * self.gait.cycles * self.gait.step_knots
        progress = np.clip((k - self.gait.stand_knots) / trotting, 0.0, 1.0)
        return self.q0[:3] + np.array([progress * self.advance, 0.0, 0.0])

    def foot_reference(self, k: int, foot: int, swing: tuple[int, int]) -> np.ndarray:
        """Where a swinging foot is at knot k: on an arc from its foothold to the next one."""
        lift_off, touchdown = swing
        swings_before = sum(
            1
            for first in self.gait.first_knots()[1:-1]
            if first + self.gait.step_knots <= lift_off and foot not in self.gait.stance(first)
        )
        start = self.footholds[foot] + np.array([swings_before * self.stride, 0.0, 0.0])
        s = (k - lift_off) / (touchdown - lift_off)
        return start + np.array([s * self.stride, 0.0, self.height * np.sin(np.pi * s)])

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
            frames=[self.base_frame],
            frame_jacobians=True,
            reference="local_world_aligned",
        )

    def linearize(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        out = self.client.linearize(self.model_id, q, v, u, **self.step)
        return out.fx, out.fu

    def base_cost(
        self, k: int, position: np.ndarray, rotation: np.ndarray, jacobian: np.ndarray
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """The base's distance to its reference and its tilt: value, gradient and Gauss-Newton
        Hessian along dq (the turn's Jacobian taken as the angular rows)."""
        residual = np.concatenate([position - self.base_reference(k), log3(rotation)])
        weights = np.concatenate([np.full(3, self.w_base), np.full(3, self.w_tilt)])
        value = 0.5 * float(residual @ (weights * residual))
        return value, jacobian.T @ (weights * residual), jacobian.T @ (weights[:, None] * jacobian)

    def running(self, q: np.ndarray, v: np.ndarray, u: np.ndarray):
        knots, nv = v.shape
        value, lx, lu, lxx, luu = ilqr.quadratic_running(v, u, self.u_ref, self.w_u, self.w_v)
        lx, lxx = lx.copy(), lxx.copy()
        frames = [self.base_frame, *self.feet]
        kin = self.client.kinematics(
            self.model_id, q, frames=frames, jacobians=True, reference="local_world_aligned"
        )
        posture = q[:, 7:] - self.q0[7:]
        value += 0.5 * self.w_posture * float(np.sum(posture * posture))
        lx[:, 6:nv] += self.w_posture * posture
        lxx[:, 6:nv, 6:nv] += self.w_posture * np.eye(nv - 6)
        for k in range(knots):
            base, gradient, hessian = self.base_cost(
                k, kin.positions[k, 0], kin.rotations[k, 0], kin.jacobians[k, 0]
            )
            value += base
            lx[k, :nv] += gradient
            lxx[k, :nv, :nv] += hessian
            for foot in range(4):
                swing = self.gait.swing(k, foot)
                if swing is None:
                    continue
                error = kin.positions[k, 1 + foot] - self.foot_reference(k, foot, swing)
                jacobian = kin.jacobians[k, 1 + foot, :3]
                # Landing on the ground matters most: the foot is held where it lands.
                weight = self.w_foot * (self.w_landing if k == swing[1] else 1.0)
                value += 0.5 * weight * float(error @ error)
                lx[k, :nv] += weight * jacobian.T @ error
                lxx[k, :nv, :nv] += weight * jacobian.T @ jacobian
        return value, lx, lu, lxx, luu

    def terminal(self, out: torqued.Rollouts, r: int) -> tuple[float, np.ndarray, np.ndarray]:
        nv = self.nv
        value, gradient, hessian = self.base_cost(
            self.gait.knots,
            out.frame_positions[r, -1, 0],
            out.frame_rotations[r, -1, 0],
            out.frame_jacobians[r, -1, 0],
        )
        v = out.v[r, -1]
        posture = out.q[r, -1, 7:] - self.q0[7:]
        value += 0.5 * self.w_v * float(v @ v) + 0.5 * self.w_posture * float(posture @ posture)
        vx = np.concatenate([gradient, self.w_v * v])
        vx[6:nv] += self.w_posture * posture
        vxx = np.zeros((2 * nv, 2 * nv))
        vxx[:nv, :nv] = hessian
        vxx[6:nv, 6:nv] += self.w_posture * np.eye(nv - 6)
        vxx[nv:, nv:] = self.w_v * np.eye(nv)
        return value, vx, vxx

    def holding_torques(self) -> np.ndarray:
        """Per knot, the leg torques that come nearest to holding the stance at rest on the
        knot's feet: a = a0 + (da/dtau) B u is affine in u, so its least-squares zero is one
        solve (see base_shift.py); on two feet it cannot be zero, and the swinging legs are held
        up against gravity."""
        zero_v, zero_u = np.zeros(self.nv), np.zeros(self.nv - 6)
        by_support: dict[tuple[int, ...], np.ndarray] = {}
        for _, contacts in self.phases:
            support = tuple(c["frame1"]["frame"] for c in contacts)
            if support in by_support:
                continue
            out = self.client.linearize(
                self.model_id,
                self.q0,
                zero_v,
                zero_u,
                dt=self.dt,
                actuation="unactuated_root",
                constraints=contacts,
                continuous_derivatives=True,
            )
            a0 = out.v_next / self.dt
            by_support[support] = np.linalg.lstsq(out.da_dtau[:, 6:], -a0, rcond=None)[0]
        return np.array(
            [
                by_support[tuple(self.feet[f] for f in self.gait.stance(k))]
                for k in range(self.gait.knots)
            ]
        )

    def stance_residual(self, feet: np.ndarray) -> float:
        """How far any stance foot moved from its foothold, metres: from the state where it lands
        (or the first) to the state after its last step in contact. `feet`: (K + 1, 4, 3)."""
        worst = 0.0
        for foot in range(4):
            foothold = None
            for k in range(self.gait.knots + 1):
                if foot in self.gait.stance(k) and foothold is None:
                    foothold = feet[k, foot]
                if foothold is not None:
                    worst = max(worst, float(np.linalg.norm(feet[k, foot] - foothold)))
                if foot not in self.gait.stance(k):
                    foothold = None
        return worst


def plot(trot: Trot, base: np.ndarray, feet: np.ndarray, path: str) -> None:
    """The base's path and the feet's heights over time, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    time_axis = trot.dt * np.arange(base.shape[0])
    figure, (path_axes, height_axes) = pyplot.subplots(2, 1, figsize=(7, 6), sharex=True)
    path_axes.plot(time_axis, base[:, 0], label="x")
    path_axes.plot(time_axis, base[:, 2], label="z")
    path_axes.set_ylabel("base position, m")
    path_axes.set_title("iLQR over torqued: trot")
    path_axes.legend()
    for foot, name in enumerate(trot.feet):
        # The hind feet dashed: each moves as the front foot of the other side.
        style = "--" if foot >= 2 else "-"
        height_axes.plot(time_axis, feet[:, foot, 2], style, label=name)
    height_axes.set_xlabel("time, s")
    height_axes.set_ylabel("foot height, m")
    height_axes.legend(ncol=2)
    for axes in (path_axes, height_axes):
        axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="localhost:50051")
    ap.add_argument("--model", default=str(robots.MODELS / "quadruped.urdf"))
    ap.add_argument("--base", default="trunk", help="the base's frame")
    ap.add_argument(
        "--feet",
        type=robots.names,
        default="FL_foot,FR_foot,HL_foot,HR_foot",
        help="front left, front right, hind left, hind right",
    )
    ap.add_argument(
        "--stance",
        type=robots.numbers(),
        default="0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4,0,0.7,-1.4",
        help="the joints after the free flyer",
    )
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--step-knots", type=int, default=12, help="knots per swing")
    ap.add_argument("--stand-knots", type=int, default=4, help="knots on four feet, each end")
    ap.add_argument("--stride", type=float, default=0.11, help="metres per swing")
    ap.add_argument("--height", type=float, default=0.04, help="metres at mid-swing")
    ap.add_argument("--dt", type=float, default=0.01)
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--advance", type=float, default=0.2, help="metres the base must go")
    ap.add_argument("--residual", type=float, default=1e-3, help="metres a stance foot may move")
    ap.add_argument("--plot", default="", help="PNG of the base's path and the feet's heights")
    a = ap.parse_args(argv)
    if len(a.feet) != 4:
        ap.error(f"--feet: four feet, got {len(a.feet)}")
    with torqued.Client(a.server) as client:
        model = robots.register(client, a.model)
        if not model.joints or model.joints[0].type != model_pb2.JOINT_TYPE_FREE_FLYER:
            ap.error(f"--model: {model.name}'s first joint is not a free flyer")
        if len(a.stance) != model.nq - 7:
            ap.error(
                f"--stance: {model.name} has {model.nq - 7} joint coordinates after its free "
                f"flyer, got {len(a.stance)}"
            )
        q0 = standing(client, model.id, model.nq, a.stance, a.feet)
        trot = Trot(
            client=client,
            model_id=model.id,
            nv=model.nv,
            nq=model.nq,
            dt=a.dt,
            gait=Gait(a.stand_knots, a.step_knots, a.cycles),
            q0=q0,
            footholds=client.kinematics(model.id, q0, frames=a.feet).positions,
            stride=a.stride,
            height=a.height,
            base_frame=a.base,
            feet=a.feet,
            position_gain=1 / a.dt**2,
            velocity_gain=1 / a.dt,
        )
        trot.u_ref = trot.holding_torques()

        def log(iteration: int, value: float) -> None:
            print(f"iteration {iteration:2d}  cost {value:12.6g}")

        start = time.monotonic()
        result = ilqr.solve(trot, q0, np.zeros(model.nv), trot.u_ref, a.iterations, log)
        kin = client.kinematics(model.id, result.q, frames=[a.base, *a.feet])
        base, feet = kin.positions[:, 0], kin.positions[:, 1:]
        advance = float(base[-1, 0] - base[0, 0])
        residual = trot.stance_residual(feet)
        print(
            f"{len(result.costs) - 1} iterations ({result.calls} calls) in "
            f"{time.monotonic() - start:.2f} s; the base went {advance:.3f} m forward, the stance "
            f"feet stayed within {residual:.2e} m of their footholds"
        )
    if a.plot:
        plot(trot, base, feet, a.plot)
    return 0 if advance >= a.advance and residual <= a.residual else 1


if __name__ == "__main__":
    sys.exit(main())
