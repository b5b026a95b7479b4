#!/usr/bin/env python3
"""Optimal control on torqued: a manipulator's end effector to a target point, solved on the
server.

    python3 reach.py [--server localhost:50051]
                     [--model ../../../deploy/models/stanford_arm.dh.txtpb]
                     [--frame link6] [--target=0.15,0.25,0.1] [--q0=0,0,0.2,0,0,0]
                     [--knots 50] [--dt 0.02] [--plot reach.png]

Any fixed-base arm: --model is a model file as robots.py reads it (URDF, MJCF, SDF with their
NAME.options.txtpb, or a RegisterModelRequest in NAME.txtpb), --frame its end effector,
--q0 the configuration it starts from at rest (zeros if not given) and --target the point, in
world coordinates, metres (give a value that starts with a minus sign as --target=-0.07,...).
The default is the Stanford arm of the repository's deploy/models/.

The problem is stated as Crocoddyl states one and solved by ControlService.Solve (FDDP) in one
call, from a cold start: the arm at rest at every knot, holding itself against gravity. Every
joint is actuated (u = tau). The cost, per knot: w_u |tau - g(q)|^2 / 2 (the torques beyond
gravity compensation) and w_v |v|^2 / 2, each times dt; at the end w_p |p(q_K) - target|^2 / 2
and w_v |v_K|^2 / 2. The script prints the solver's cost per iteration and the end effector's
distance to the target, plots the cost (--plot) and exits 0 once the end effector ends within
--tolerance of the target. ilqr.py solves the same problem with a solver of its own over
Linearize and Rollout.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import torqued
from torqued import residuals
from torqued.v1 import model_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures  # noqa: E402 (beside this script)
import robots  # noqa: E402 (beside this script)

# The weights: the torques beyond gravity, the velocities, the end effector at the end.
W_U, W_V, W_P = 1e-2, 1e-1, 1e5


def reach_problem(
    model: model_pb2.Model, q0: np.ndarray, frame: str, target: np.ndarray, knots: int, dt: float
) -> torqued.OptimalControlProblem:
    """The reach of the module's docstring, from q0 at rest."""
    nv = model.nv
    problem = torqued.OptimalControlProblem(model, q0, np.zeros(nv), knots=knots, dt=dt)
    at_rest, velocity = robots.at_rest(q0, nv)
    problem.add_running_cost("effort", residuals.control_gravity(), weight=W_U)
    problem.add_running_cost("velocity", at_rest, velocity, weight=W_V)
    problem.add_terminal_cost("reach", residuals.frame_translation(frame, target), weight=W_P)
    problem.add_terminal_cost("rest", at_rest, velocity, weight=W_V)
    return problem


def options(description: str) -> argparse.ArgumentParser:
    """The reach's options (see the module), shared with ilqr.py."""
    ap = argparse.ArgumentParser(description=description)
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
    return ap


def arm(
    client: torqued.Client, ap: argparse.ArgumentParser, a: argparse.Namespace
) -> tuple[model_pb2.Model, np.ndarray]:
    """The arm of --model, registered, and its start q0 (--q0, checked against it)."""
    model = robots.register(client, a.model)
    q0 = np.zeros(model.nq) if a.q0 is None else a.q0
    if len(q0) != model.nq:
        ap.error(f"--q0: {model.name} has {model.nq} coordinates, got {len(q0)}")
    return model, q0


def main(argv: list[str] | None = None) -> int:
    ap = options(__doc__.splitlines()[0])
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        model, q0 = arm(client, ap, a)
        problem = reach_problem(model, q0, a.frame, a.target, a.knots, a.dt)
        problem.solver(max_iterations=a.iterations)
        start = time.monotonic()
        solution = client.solve(problem)
        seconds = time.monotonic() - start
        reached = client.kinematics(model.id, solution.q[-1], frames=[a.frame]).positions[0]
    costs = robots.print_iterations(solution)
    distance = float(np.linalg.norm(reached - a.target))
    print(
        f"{len(costs)} iterations ({solution.stop_reason}) in {seconds:.3f} s, "
        f"{solution.solve_seconds:.3f} s of them solving on the server; the end effector ends "
        f"{distance * 1e3:.3f} mm from the target"
    )
    if a.plot:
        figures.costs(costs, "FDDP on torqued: reach", a.plot)
    return 0 if distance <= a.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
