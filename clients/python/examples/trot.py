#!/usr/bin/env python3
"""Optimal control on torqued: a quadruped trots forward, its diagonal feet swapping, through a
contact schedule solved on the server.

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

The problem is built as Crocoddyl builds a locomotion problem (Mastalli et al. 2020, §IV-B) and
solved by ControlService.Solve (FDDP) in one call, from a cold start (the stance at every knot,
with each knot's quasi-static torques and forces). A phase per support, each foot a rigid 3D
contact anchored at its foothold (CONSTRAINT_TYPE_POINT to a point of the world: where it stood,
then where its swing ends) with deadbeat Baumgarte gains; each phase that adds feet begins with
their touchdown's impact (plastic). The cost, per knot: the base's placement against its
reference (its start moved forward at the trot's pace, level; a term per knot), the joints'
distance to the stance and the velocities, the torques, and each swinging foot's distance to its
arc (a term per foot and knot, the landing knot weighed most); the terminal cost holds the base
at the end of its path, level, in the stance and at rest. The default gait has 156 terms and
three cycles 228, within the server's --max-cost-terms (256); a longer trot needs it raised.

The script prints the solver's cost per iteration, how far the base went and how far any stance
foot moved from its foothold; with --plot it draws the base's path and the feet's heights (PNG).
It exits 0 when the base went at least --advance metres forward with every stance foot within
--residual of its foothold.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

import torqued
from torqued import activations, residuals
from torqued.v1 import control_pb2, dynamics_pb2, model_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robots  # noqa: E402 (beside this script)
from base_shift import legged_robot  # noqa: E402 (beside this script)

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
    """The trot's problem: its gait, the robot's stance and footholds, the swings' shape and the
    cost's weights."""

    model: model_pb2.Model
    dt: float
    gait: Gait
    q0: np.ndarray  # the stance
    base_position: np.ndarray  # the base frame's, in the stance
    orientation: np.ndarray  # the base frame's rotation in the stance, kept throughout
    footholds: np.ndarray  # (4, 3): where the feet stand at the start
    stride: float
    height: float
    base_frame: str
    feet: list[str]
    w_base: float = 1e4
    w_tilt: float = 1e4
    w_posture: float = 1e1
    w_v: float = 1e-1
    w_u: float = 1e-3
    w_foot: float = 1e5
    w_landing: float = 1e2  # the touchdown knot's share of w_foot
    w_cone: float = 1e2

    @property
    def advance(self) -> float:
        return self.gait.cycles * self.stride

    def swings_before(self, foot: int, k: int) -> int:
        """The swings `foot` has ended by knot k (its touchdown at or before k)."""
        return sum(
            1
            for first in self.gait.first_knots()[1:-1]
            if first + self.gait.step_knots <= k and foot not in self.gait.stance(first)
        )

    def foothold(self, foot: int, k: int) -> np.ndarray:
        """Where `foot` stands at knot k, or last stood before its swing."""
        return self.footholds[foot] + np.array([self.swings_before(foot, k) * self.stride, 0, 0])

    def contacts(self, first: int) -> list[dynamics_pb2.Constraint]:
        """The phase beginning at knot `first`: its feet, each anchored at its foothold."""
        return [
            torqued.contact(self.feet[f], translation=self.foothold(f, first))
            for f in self.gait.stance(first)
        ]

    def base_reference(self, k: int) -> np.ndarray:
        """The base's position at knot k: its start, moved forward at the trot's pace."""
        trotting = 2 * self.gait.cycles * self.gait.step_knots
        progress = np.clip((k - self.gait.stand_knots) / trotting, 0.0, 1.0)
        return self.base_position + np.array([progress * self.advance, 0.0, 0.0])

    def base_placement(self, k: int) -> control_pb2.Residual:
        """The base frame's placement against its reference at knot k, in its stance orientation."""
        return residuals.frame_placement(self.base_frame, self.base_reference(k), self.orientation)

    def foot_reference(self, k: int, foot: int, swing: tuple[int, int]) -> np.ndarray:
        """Where a swinging foot is at knot k: on an arc from its foothold to the next one."""
        lift_off, touchdown = swing
        s = (k - lift_off) / (touchdown - lift_off)
        start = self.foothold(foot, lift_off)
        return start + np.array([s * self.stride, 0.0, self.height * np.sin(np.pi * s)])

    def problem(
        self,
        first: int = 0,
        knots: int | None = None,
        state: tuple[np.ndarray, np.ndarray] | None = None,
        friction: float | None = None,
    ) -> torqued.OptimalControlProblem:
        """The Solve problem of the module's docstring; with `first` and `knots`, its window of
        `knots` knots from knot `first`, from `state` (q, v) (default: the stance at rest), as
        an MPC tick restates it. With `friction` (mu), each stance foot's force also stays in its
        friction cone, a quadratic barrier on the cone's faces (w_cone) per phase and foot: a
        plant whose ground only pushes (mpc_trot.py) needs it, as the rigid contacts of the
        problem would also pull."""
        nv = self.model.nv
        knots = self.gait.knots - first if knots is None else knots
        q0, v0 = (self.q0, np.zeros(nv)) if state is None else state
        problem = torqued.OptimalControlProblem(self.model, q0, v0, knots=knots, dt=self.dt)
        problem.actuation("unactuated_root")
        starts = [first, *(k for k in self.gait.first_knots() if first < k < first + knots)]
        for k in starts:
            problem.add_phase(k - first, self.contacts(k))
        problem.baumgarte_gains(1 / self.dt**2, 1 / self.dt)
        base_weights = activations.weighted_quadratic([self.w_base] * 3 + [self.w_tilt] * 3)
        # x (-) (q0, 0): the joints against the stance and the velocities, not the base.
        at_rest, _ = robots.at_rest(self.q0, nv)
        posture = activations.weighted_quadratic(
            np.concatenate([np.zeros(6), np.full(nv - 6, self.w_posture), np.full(nv, self.w_v)])
        )
        problem.add_running_cost("posture", at_rest, posture)
        problem.add_running_cost("effort", residuals.control(), weight=self.w_u)
        if friction is not None:
            inside = activations.quadratic_barrier([0.0] * 4, [np.inf] * 4)
            for phase, (start, end) in enumerate(zip(starts, [*starts[1:], first + knots])):
                for foot in self.gait.stance(start):
                    problem.add_running_cost(
                        f"cone_{phase}_{self.feet[foot]}",
                        residuals.friction_cone(self.feet[foot], friction),
                        inside,
                        weight=self.w_cone,
                        knots=range(start - first, end - first),
                    )
        for t in range(knots):
            k = first + t
            problem.add_running_cost(
                f"base_{t}", self.base_placement(k), base_weights, knots=range(t, t + 1)
            )
            for foot in range(4):
                swing = self.gait.swing(k, foot)
                if swing is None:
                    continue
                on_arc = self.foot_reference(k, foot, swing)
                arc = residuals.frame_translation(self.feet[foot], on_arc)
                # Landing where the foot's anchor is matters most: the contact holds it there.
                weight = self.w_foot * (self.w_landing if k == swing[1] else 1.0)
                problem.add_running_cost(
                    f"{self.feet[foot]}_{t}", arc, weight=weight, knots=range(t, t + 1)
                )
        problem.add_terminal_cost("base_final", self.base_placement(first + knots), base_weights)
        problem.add_terminal_cost("rest", at_rest, posture)
        return problem

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
    path_axes.set_title("FDDP on torqued: trot")
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


def add_trot_options(ap: argparse.ArgumentParser, cycles: int) -> None:
    """The options of the robot and its gait, as the module's docstring states them."""
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
    ap.add_argument("--cycles", type=int, default=cycles)
    ap.add_argument("--step-knots", type=int, default=12, help="knots per swing")
    ap.add_argument("--stand-knots", type=int, default=4, help="knots on four feet, each end")
    ap.add_argument("--stride", type=float, default=0.11, help="metres per swing")
    ap.add_argument("--height", type=float, default=0.04, help="metres at mid-swing")
    ap.add_argument("--dt", type=float, default=0.01)


def trot_of(client: torqued.Client, ap: argparse.ArgumentParser, a: argparse.Namespace) -> Trot:
    """The trot of the options: the robot registered, standing in its stance on its feet."""
    if len(a.feet) != 4:
        ap.error(f"--feet: four feet, got {len(a.feet)}")
    model, q0 = legged_robot(client, ap, a)
    stance = client.kinematics(model.id, q0, frames=[a.base, *a.feet])
    return Trot(
        model=model,
        dt=a.dt,
        gait=Gait(a.stand_knots, a.step_knots, a.cycles),
        q0=q0,
        base_position=stance.positions[0],
        orientation=stance.rotations[0],
        footholds=stance.positions[1:],
        stride=a.stride,
        height=a.height,
        base_frame=a.base,
        feet=a.feet,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trot_options(ap, cycles=2)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--advance", type=float, default=0.2, help="metres the base must go")
    ap.add_argument("--residual", type=float, default=1e-3, help="metres a stance foot may move")
    ap.add_argument("--plot", default="", help="PNG of the base's path and the feet's heights")
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        trot = trot_of(client, ap, a)
        problem = trot.problem()
        problem.solver(max_iterations=a.iterations)
        start = time.monotonic()
        solution = client.solve(problem)
        seconds = time.monotonic() - start
        kin = client.kinematics(trot.model.id, solution.q, frames=[a.base, *a.feet])
    robots.print_iterations(solution)
    base, feet = kin.positions[:, 0], kin.positions[:, 1:]
    advance = float(base[-1, 0] - base[0, 0])
    residual = trot.stance_residual(feet)
    print(
        f"{len(solution.iterations)} iterations ({solution.stop_reason}) in {seconds:.3f} s, "
        f"{solution.solve_seconds:.3f} s of them solving on the server; the base went "
        f"{advance:.3f} m forward, the stance feet stayed within {residual:.2e} m of their "
        "footholds"
    )
    if a.plot:
        plot(trot, base, feet, a.plot)
    return 0 if advance >= a.advance and residual <= a.residual else 1


if __name__ == "__main__":
    sys.exit(main())
