#!/usr/bin/env python3
"""Optimal control on torqued: a quadruped shifts its base while its four feet stay in rigid
contact, solved on the server.

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
a rigid 3D contact with the ground, held where it stands (a point contact without an anchor),
the free-flyer base is unactuated (u = tau of the other joints), and ControlService.Solve (FDDP)
solves the problem in one call from a cold start: the stance at every knot, and the torques and
contact forces that hold it (the quasi-static guess). The cost, per knot: w_u |u|^2 / 2 and
w_v |v|^2 / 2, each times dt; at the end the base's placement, w_p on its distance to the target
and w_r on its turn (the log of its rotation against the start's), and w_v |v_K|^2 / 2.

The contacts hold the feet at the acceleration level, and a discrete step lets a foot move by
O(dt^2) of its curvature terms; without stabilization those errors add up over the horizon.
Baumgarte's gains pull them back: with the deadbeat pair K_p = 1/dt^2, K_d = 1/dt a semi-implicit
step removes a foot's position and velocity error within two steps, so that the residual stays at
one step's error, O(dt^2). The script prints the solver's cost per iteration, the base's distance
to its target and the feet's largest distance from where they stood, plots the cost (--plot), and
exits 0 when the base ends within --tolerance of its target with that residual within --residual.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import torqued
from torqued import activations, residuals
from torqued.v1 import model_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures  # noqa: E402 (beside this script)
import robots  # noqa: E402 (beside this script)

# The weights: the torques, the velocities, the base's distance to its target and its turn.
W_U, W_V, W_P, W_R = 1e-3, 1e-1, 1e6, 1e5


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


def legged_robot(
    client: torqued.Client, ap: argparse.ArgumentParser, a: argparse.Namespace
) -> tuple[model_pb2.Model, np.ndarray]:
    """The robot of --model, registered and checked to float, and its --stance standing on
    --feet (see standing())."""
    model = robots.register(client, a.model)
    if not model.joints or model.joints[0].type != model_pb2.JOINT_TYPE_FREE_FLYER:
        ap.error(f"--model: {model.name}'s first joint is not a free flyer")
    if len(a.stance) != model.nq - 7:
        ap.error(
            f"--stance: {model.name} has {model.nq - 7} joint coordinates after its free flyer, "
            f"got {len(a.stance)}"
        )
    return model, standing(client, model.id, model.nq, a.stance, a.feet)


def base_shift_problem(
    model: model_pb2.Model,
    q0: np.ndarray,
    base: str,
    feet: list[str],
    target: np.ndarray,
    orientation: np.ndarray,
    knots: int,
    dt: float,
    gains: tuple[float, float],
) -> torqued.OptimalControlProblem:
    """The base shift of the module's docstring: from q0 at rest to the base at `target` in
    `orientation` (a rotation matrix), on the four feet."""
    nv = model.nv
    problem = torqued.OptimalControlProblem(model, q0, np.zeros(nv), knots=knots, dt=dt)
    problem.actuation("unactuated_root")
    problem.add_phase(0, feet)
    problem.baumgarte_gains(*gains)
    at_rest, velocity = robots.at_rest(q0, nv)
    problem.add_running_cost("effort", residuals.control(), weight=W_U)
    problem.add_running_cost("velocity", at_rest, velocity, weight=W_V)
    placement = residuals.frame_placement(base, target, orientation)
    weights = activations.weighted_quadratic([W_P] * 3 + [W_R] * 3)
    problem.add_terminal_cost("base", placement, weights)
    problem.add_terminal_cost("rest", at_rest, velocity, weight=W_V)
    return problem


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
    gains = (
        (1 / a.dt**2, 1 / a.dt)
        if a.gains == "deadbeat"
        else tuple(float(x) for x in a.gains.split(","))
    )
    with torqued.Client(a.server) as client:
        model, q0 = legged_robot(client, ap, a)
        start = client.kinematics(model.id, q0, frames=[a.base])
        target = start.positions[0] + a.shift
        problem = base_shift_problem(
            model, q0, a.base, a.feet, target, start.rotations[0], a.knots, a.dt, gains
        )
        problem.solver(max_iterations=a.iterations)
        start = time.monotonic()
        solution = client.solve(problem)
        seconds = time.monotonic() - start
        reached = client.kinematics(model.id, solution.q[-1], frames=[a.base]).positions[0]
        feet = client.kinematics(model.id, solution.q, frames=a.feet).positions
    costs = robots.print_iterations(solution)
    distance = float(np.linalg.norm(reached - target))
    # The feet's constraint residual: the largest distance of a foot from where it stood.
    residual = float(np.max(np.linalg.norm(feet - feet[0], axis=-1)))
    print(
        f"{len(costs)} iterations ({solution.stop_reason}) in {seconds:.3f} s, "
        f"{solution.solve_seconds:.3f} s of them solving on the server; the base ends "
        f"{distance * 1e3:.3f} mm from its target, the feet within {residual:.2e} m of where "
        "they stood"
    )
    if a.plot:
        figures.costs(costs, "FDDP on torqued: base shift in contact", a.plot)
    return 0 if distance <= a.tolerance and residual <= a.residual else 1


if __name__ == "__main__":
    sys.exit(main())
