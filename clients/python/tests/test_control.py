"""ControlService through the client: the request the problem builder makes (no server), and
Solve on the repository's robots: the Stanford arm's end effector reaches its target, the solution
is the rollout of its controls, its feedback gains steer a perturbed start there too, a warm start
from it converges at once, control bounds hold, a time budget answers the best iterate so far, the
quadruped shifts its base with its feet held, and bad inputs are refused naming the field. Over an
Mpc stream, the arm reaches its target in closed loop through Simulate, a new target steers it,
and a bad tick raises while the stream goes on.
"""

from __future__ import annotations

import math
from typing import Callable

import grpc
import numpy as np
import pytest

import torqued
from torqued.v1 import control_pb2, dynamics_pb2, model_pb2

ARM_Q0 = np.array([0.0, 0.0, 0.2, 0.0, 0.0, 0.0])
ARM_FRAME = "link6"
ARM_TARGET = np.array([0.15, 0.25, 0.1])
ARM_KNOTS, ARM_DT = 20, 0.05
# With its terminal weight the reach stops the end effector 1.3e-5 m from its target (measured);
# the bar is the order of magnitude.
REACH_TOLERANCE = 1e-4  # m

FEET = ["FL_foot", "FR_foot", "HL_foot", "HR_foot"]
STANCE = [0.0, 0.7, -1.4] * 4


def rotation_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll), as model.proto's Placement defines it."""
    cr, sr, cp, sp, cy, sy = (f(a) for a in (roll, pitch, yaw) for f in (math.cos, math.sin))
    rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    return rz @ ry @ rx


def reach_problem(
    model: str | model_pb2.Model, reach_weight: float = 10.0
) -> torqued.OptimalControlProblem:
    """The Stanford arm's end effector to ARM_TARGET from ARM_Q0 at rest, Crocoddyl's way: the
    target weighed lightly (`reach_weight`) along the way and heavily at the end, the posture and
    the torques beyond gravity regularized."""
    x0 = np.concatenate([ARM_Q0, np.zeros(6)])
    problem = torqued.OptimalControlProblem(model, ARM_Q0, np.zeros(6), knots=ARM_KNOTS, dt=ARM_DT)
    reach = torqued.residuals.frame_translation(ARM_FRAME, ARM_TARGET)
    posture = torqued.residuals.state(x0)
    problem.add_running_cost("reach", reach, weight=reach_weight)
    problem.add_running_cost("posture", posture, weight=0.1)
    problem.add_running_cost("effort", torqued.residuals.control_gravity(), weight=1e-3)
    problem.add_terminal_cost("final_reach", reach, weight=1e5)
    problem.add_terminal_cost("final_posture", posture, weight=0.1)
    return problem


@pytest.fixture(scope="module")
def arm(client: torqued.Client, bundled: dict[str, str]) -> model_pb2.Model:
    return client.get_model(bundled["stanford_arm"])


@pytest.fixture(scope="module")
def reached(client: torqued.Client, arm: model_pb2.Model) -> torqued.Solution:
    return client.solve(reach_problem(arm), feedback=True)


def test_the_request_holds_the_problem_as_built() -> None:
    problem = torqued.OptimalControlProblem(
        "robot-id", np.zeros(19), np.zeros(18), knots=40, dt=0.02, integrator="rk4"
    )
    problem.actuation("unactuated_root")
    anchor = rotation_from_rpy(0.1, -0.2, 0.3)
    problem.add_phase(0, FEET)
    problem.add_phase(
        10, ["FL_foot", torqued.contact("HR_foot", "weld", translation=[0.2, -0.1, 0.0],
                                        rotation=anchor)], restitution=0.5
    )
    problem.baumgarte_gains(position=100.0, velocity=20.0)
    weights = np.arange(36.0)
    problem.add_running_cost(
        "posture", torqued.residuals.state(), torqued.activations.weighted_quadratic(weights)
    )
    problem.add_running_cost(
        "lift", torqued.residuals.frame_velocity("FL_foot", [0, 0, 1, 0, 0, 0],
                                                 reference="local_world_aligned"),
        weight=2.5, knots=range(5, 10),
    )
    problem.add_running_cost(
        "grip", torqued.residuals.friction_cone("HR_foot", 0.7, faces=8, normal=[0, 0, 1]),
        torqued.activations.quadratic_barrier(np.zeros(9), np.full(9, np.inf)),
        knots=(10, None),
    )
    problem.add_running_cost(
        "push", torqued.residuals.contact_force("FL_foot", [0, 0, 30]), knots=(0, 10)
    )
    problem.add_running_cost(
        "limits", torqued.residuals.joint_limits(), torqued.activations.quadratic_barrier()
    )
    problem.add_terminal_cost(
        "centre", torqued.residuals.center_of_mass([0.1, 0.0, 0.3]), weight=1e3
    )
    problem.add_terminal_cost(
        "heading", torqued.residuals.frame_rotation("trunk", [0.0, 0.0, 0.5]),
        torqued.activations.smooth_1_norm(1e-4),
    )
    problem.control_bounds(np.full(12, -30.0), np.full(12, 30.0))
    problem.solver(max_iterations=50, stop_threshold=1e-8)

    request = problem.to_request()
    assert isinstance(request, control_pb2.SolveRequest)
    assert (request.model_id, request.knots, request.dt) == ("robot-id", 40, 0.02)
    assert (len(request.q0), len(request.v0)) == (19, 18)
    assert request.integrator == dynamics_pb2.INTEGRATOR_RK4
    assert request.actuation.kind == dynamics_pb2.ACTUATION_KIND_UNACTUATED_ROOT
    assert [p.first_knot for p in request.phases] == [0, 10]
    assert [c.frame1.frame for c in request.phases[0].contacts] == FEET
    # Bare frame names: point contacts held where the feet stand (no anchor).
    assert all(c.type == model_pb2.CONSTRAINT_TYPE_POINT for c in request.phases[0].contacts)
    assert not any(c.HasField("frame2") for c in request.phases[0].contacts)
    weld = request.phases[1].contacts[1]
    assert weld.type == model_pb2.CONSTRAINT_TYPE_WELD and weld.frame2.frame == ""
    anchored = weld.frame2.placement
    assert (anchored.xyz.x, anchored.xyz.y, anchored.xyz.z) == (0.2, -0.1, 0.0)
    np.testing.assert_allclose([anchored.rpy.x, anchored.rpy.y, anchored.rpy.z], [0.1, -0.2, 0.3],
                               rtol=0, atol=1e-15)
    assert request.phases[1].restitution == 0.5
    assert (request.gains.position, request.gains.velocity) == (100.0, 20.0)

    running = {term.name: term for term in request.running_costs}
    assert list(running) == ["posture", "lift", "grip", "push", "limits"]
    assert [t.name for t in request.terminal_costs] == ["centre", "heading"]
    posture = running["posture"]
    assert posture.residual.type == control_pb2.RESIDUAL_TYPE_STATE
    assert not posture.residual.reference  # the neutral configuration at rest
    assert list(posture.activation.weights) == weights.tolist()
    assert (posture.weight, posture.first_knot, posture.HasField("end_knot")) == (1.0, 0, False)
    lift = running["lift"]
    assert lift.residual.velocity_frame == dynamics_pb2.REFERENCE_FRAME_LOCAL_WORLD_ALIGNED
    assert (lift.weight, lift.first_knot, lift.end_knot) == (2.5, 5, 10)
    assert lift.activation.type == control_pb2.ACTIVATION_TYPE_QUADRATIC
    grip = running["grip"]
    assert (grip.first_knot, grip.HasField("end_knot")) == (10, False)
    assert (grip.residual.cone.friction, grip.residual.cone.faces) == (0.7, 8)
    assert grip.residual.cone.normal.z == 1.0
    assert list(grip.activation.upper) == [math.inf] * 9
    assert (running["push"].first_knot, running["push"].end_knot) == (0, 10)
    assert list(running["push"].residual.reference) == [0, 0, 30]
    limits = running["limits"].activation
    assert limits.type == control_pb2.ACTIVATION_TYPE_QUADRATIC_BARRIER and not limits.lower
    centre, heading = request.terminal_costs
    assert list(centre.residual.reference) == [0.1, 0.0, 0.3] and centre.weight == 1e3
    assert heading.residual.placement.rpy.z == 0.5 and heading.activation.smoothing == 1e-4
    assert len(request.control_bounds.lower) == len(request.control_bounds.upper) == 12
    assert request.solver.max_iterations == 50 and request.solver.stop_threshold == 1e-8
    # The settings not given keep the server's defaults.
    assert not request.solver.HasField("initial_regularization")
    # A guess and the call's options are solve()'s: the problem's request has none.
    assert not request.guess_q and not request.feedback and request.max_seconds == 0
    # to_request() is a copy: changing it changes nothing in the problem.
    request.knots = 1
    assert problem.to_request().knots == 40


def test_the_builder_refuses_what_it_cannot_send() -> None:
    problem = torqued.OptimalControlProblem("robot-id", np.zeros(6), np.zeros(6), knots=10, dt=0.1)
    with pytest.raises(ValueError, match="step 1"):
        problem.add_running_cost("reach", torqued.residuals.control(), knots=range(0, 10, 2))
    with pytest.raises(ValueError, match="contact kind"):
        torqued.contact("FL_foot", "hinge")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="contact.translation"):
        torqued.contact("FL_foot", translation=[0.0, 0.0])
    with pytest.raises(ValueError, match="expected a 3 x 3 rotation matrix"):
        torqued.residuals.frame_rotation("link6", np.eye(4))
    with pytest.raises(ValueError, match="not a rotation matrix"):
        torqued.residuals.frame_rotation("link6", np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="not a rotation matrix"):
        torqued.residuals.frame_placement("link6", [0, 0, 0], np.full((3, 3), np.nan))


@pytest.mark.parametrize(
    "pitch",
    # Generic pitches, and pitches at and within rounding of +-pi/2, where roll and yaw turn about
    # the same axis and only their difference (or sum) is determined.
    [0.0, 0.4, -1.2, math.pi / 2, -math.pi / 2, math.pi / 2 - 1e-9, -math.pi / 2 + 1e-12],
)
def test_rotation_matrices_become_the_placements_roll_pitch_yaw(pitch: float) -> None:
    rng = np.random.default_rng(int(abs(pitch) * 1e3))
    for roll, yaw in rng.uniform(-math.pi, math.pi, (20, 2)):
        rotation = rotation_from_rpy(roll, pitch, yaw)
        rpy = torqued.residuals.frame_rotation("link6", rotation).placement.rpy
        # The angles give back the matrix to rounding, whichever of the equivalent triples they
        # are at +-pi/2.
        rebuilt = rotation_from_rpy(rpy.x, rpy.y, rpy.z)
        np.testing.assert_allclose(rebuilt, rotation, rtol=0, atol=4e-16 * 8)
        assert abs(rpy.y) <= math.pi / 2
        if abs(abs(pitch) - math.pi / 2) > 1e-3:
            np.testing.assert_allclose([rpy.x, rpy.y, rpy.z], [roll, pitch, yaw], rtol=0,
                                       atol=1e-14)
    # Angles given as such are sent as they are.
    given = torqued.residuals.frame_rotation("link6", [0.3, 2.0, -4.0]).placement.rpy
    assert (given.x, given.y, given.z) == (0.3, 2.0, -4.0)


def test_a_reach_on_the_stanford_arm_ends_at_its_target(
    client: torqued.Client, arm: model_pb2.Model, reached: torqued.Solution
) -> None:
    solution = reached
    assert solution.stop_reason == "converged"
    assert solution.q.shape == (ARM_KNOTS + 1, arm.nq)
    assert solution.v.shape == (ARM_KNOTS + 1, arm.nv)
    assert solution.u.shape == (ARM_KNOTS, arm.nv)
    assert solution.feedback is not None
    assert solution.feedback.shape == (ARM_KNOTS, arm.nv, 2 * arm.nv)
    np.testing.assert_array_equal(solution.q[0], ARM_Q0)
    np.testing.assert_array_equal(solution.v[0], np.zeros(arm.nv))
    reached_at = client.kinematics(arm.id, solution.q[-1], frames=[ARM_FRAME]).positions[0]
    assert np.linalg.norm(reached_at - ARM_TARGET) < REACH_TOLERANCE
    # Feasible: the states are the rollout of the controls, step for step.
    assert solution.feasible and solution.max_gap == 0.0
    rolled = client.rollout(arm.id, ARM_Q0, np.zeros(arm.nv), solution.u, dt=ARM_DT)
    np.testing.assert_allclose(rolled.q, solution.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(rolled.v, solution.v, rtol=0, atol=1e-9)
    # The iterations lower the cost to the solution's, which is the sum of its terms'.
    assert solution.iterations and solution.iterations[-1].cost == pytest.approx(solution.cost)
    assert solution.iterations[-1].stop < 1e-9
    costs = [iteration.cost for iteration in solution.iterations]
    assert costs == sorted(costs, reverse=True)
    assert list(solution.cost_terms) == [
        "reach", "posture", "effort", "final_reach", "final_posture"
    ]
    assert sum(solution.cost_terms.values()) == pytest.approx(solution.cost, rel=1e-12)
    assert 0.0 < solution.solve_seconds


def test_the_feedback_gains_steer_a_perturbed_start_to_the_target(
    client: torqued.Client, arm: model_pb2.Model, reached: torqued.Solution
) -> None:
    assert reached.feedback is not None
    q0 = ARM_Q0 + 0.03 * np.array([1.0, -1.0, 0.2, 1.0, -1.0, 1.0])
    common = {"dt": ARM_DT, "frames": [ARM_FRAME]}
    open_loop = client.rollout(arm.id, q0, np.zeros(arm.nv), reached.u, **common)
    closed_loop = client.rollout(
        arm.id, q0, np.zeros(arm.nv), reached.u, q_nominal=reached.q[:-1],
        v_nominal=reached.v[:-1], feedback=reached.feedback, **common
    )

    def miss(rollout: torqued.Rollouts) -> float:
        return float(np.linalg.norm(rollout.frame_positions[-1, 0] - ARM_TARGET))

    # Measured: 0.25 m open loop, 1.2e-5 m closed loop.
    assert miss(open_loop) > 0.1
    assert closed_loop.steps == ARM_KNOTS and miss(closed_loop) < REACH_TOLERANCE


def test_a_warm_start_from_the_solution_converges_within_two_iterations(
    client: torqued.Client, arm: model_pb2.Model, reached: torqued.Solution
) -> None:
    problem = reach_problem(arm.id)
    warm = client.solve(problem, guess=reached)
    assert warm.stop_reason == "converged"
    assert len(warm.iterations) <= 2
    assert warm.cost == pytest.approx(reached.cost, rel=1e-9)
    # Told the guess is a rollout, the solver starts feasible: one iteration.
    feasible = client.solve(problem, guess=reached, guess_feasible=True)
    assert feasible.stop_reason == "converged" and len(feasible.iterations) == 1
    # Crocoddyl's (xs, us) is the same guess.
    xs = np.hstack([reached.q, reached.v])
    assert client.solve(problem, guess=(xs, reached.u)).cost == warm.cost


def test_control_bounds_hold_the_torques_and_the_reach_still_ends_at_its_target(
    client: torqued.Client, arm: model_pb2.Model, reached: torqued.Solution
) -> None:
    # Below the free solution's largest torques (3.4, 12, 48, 0.009, 0.55, 0.001) on the first,
    # second and fifth joints; the third's above the gravity it holds at the start (50 N), where
    # the cold start's controls are.
    bound = np.array([2.0, 10.0, 60.0, 5.0, 0.3, 5.0])
    problem = reach_problem(arm)
    problem.control_bounds(-bound, bound)
    solution = client.solve(problem)
    assert solution.stop_reason == "converged" and solution.feasible
    assert np.all(np.abs(solution.u) <= bound)
    assert np.all(np.abs(solution.u).max(axis=0)[[0, 1, 4]] == bound[[0, 1, 4]])
    assert solution.cost > reached.cost
    reached_at = client.kinematics(arm.id, solution.q[-1], frames=[ARM_FRAME]).positions[0]
    assert np.linalg.norm(reached_at - ARM_TARGET) < REACH_TOLERANCE


def test_a_problem_changed_after_a_solve_is_solved_as_changed(
    client: torqued.Client, arm: model_pb2.Model
) -> None:
    # Client.solve keeps a problem's serialized request from one solve to the next: every change
    # in between must reach the server.
    problem = reach_problem(arm)
    problem.solver(max_iterations=1)
    assert client.solve(problem, feedback=True).stop_reason == "iteration_limit"
    problem.solver(max_iterations=100)
    bound = np.full(6, 60.0)
    bound[1] = 10.0
    problem.control_bounds(-bound, bound)
    problem.add_running_cost("more_effort", torqued.residuals.control(), weight=1e-4)
    changed = client.solve(problem)
    assert changed.stop_reason == "converged" and changed.feedback is None
    assert np.abs(changed.u[:, 1]).max() == 10.0
    assert list(changed.cost_terms)[3] == "more_effort"


def test_a_time_budget_answers_the_best_iterate_so_far(
    client: torqued.Client, arm: model_pb2.Model
) -> None:
    solution = client.solve(reach_problem(arm), max_seconds=1e-9)
    assert solution.stop_reason == "time_budget"
    assert solution.q.shape == (ARM_KNOTS + 1, arm.nq)


def test_the_quadruped_shifts_its_base_with_its_feet_held(
    client: torqued.Client, bundled: dict[str, str]
) -> None:
    dog = client.get_model(bundled["quadruped"])
    q0 = np.zeros(dog.nq)
    q0[6], q0[7:] = 1.0, STANCE
    # Lowered until its lowest foot touches z = 0.
    q0[2] = -client.kinematics(dog.id, q0, frames=FEET).positions[:, 2].min()
    feet = client.kinematics(dog.id, q0, frames=FEET).positions
    knots, dt = 40, 0.02
    target = q0[:3] + [0.03, 0.02, -0.02]
    problem = torqued.OptimalControlProblem(dog, q0, np.zeros(dog.nv), knots=knots, dt=dt)
    problem.actuation("unactuated_root")
    # Anchored where they stand, the feet as Crocoddyl's contacts with their reference placements.
    problem.add_phase(0, [torqued.contact(f, translation=p) for f, p in zip(FEET, feet)])
    # Deadbeat gains: the feet's drift of the acceleration-level constraint is pulled back.
    problem.baumgarte_gains(position=1.0 / dt**2, velocity=1.0 / dt)
    base = torqued.residuals.frame_translation("trunk", target)
    weights = np.concatenate([[0.0] * 3, [100.0] * 3, [0.01] * 12, [1.0] * 6, [0.1] * 12])
    posture = torqued.residuals.state(np.concatenate([q0, np.zeros(dog.nv)]))
    problem.add_running_cost("base", base, weight=10.0)
    problem.add_running_cost("posture", posture, torqued.activations.weighted_quadratic(weights))
    problem.add_running_cost("effort", torqued.residuals.control(), weight=0.1)
    problem.add_terminal_cost("final_base", base, weight=1e5)
    problem.add_terminal_cost(
        "final_posture", posture, torqued.activations.weighted_quadratic(weights), weight=10.0
    )
    solution = client.solve(problem)
    assert solution.stop_reason == "converged" and solution.feasible
    assert solution.u.shape == (knots, dog.nv - 6)
    # Measured: the base 0.11 mm from its target, the feet within 0.03 mm of where they stood
    # (0.45 mm without the gains).
    moved = client.kinematics(dog.id, solution.q[-1], frames=["trunk"]).positions[0]
    assert np.linalg.norm(moved - target) < 1e-3
    held = client.kinematics(dog.id, solution.q, frames=FEET).positions
    assert np.abs(held - feet).max() < 1e-4


BadInput = Callable[[torqued.OptimalControlProblem], None]
BAD_INPUTS: dict[str, tuple[BadInput, list[str]]] = {
    "unknown frame": (
        lambda p: p.add_running_cost(
            "lost", torqued.residuals.frame_translation("no_such_frame", [0, 0, 0])
        ),
        ['running_costs[3] ("lost").residual.frame', "no_such_frame"],
    ),
    "wrong reference size": (
        lambda p: p.add_terminal_cost(
            "short", torqued.residuals.frame_translation(ARM_FRAME, [0.1, 0.2])
        ),
        ['terminal_costs[2] ("short").residual.reference', "expected 3 values", "got 2"],
    ),
    "NaN in a reference": (
        lambda p: p.add_running_cost(
            "undefined", torqued.residuals.center_of_mass([0.0, math.nan, 0.0])
        ),
        ['running_costs[3] ("undefined").residual.reference[1]', "NaN"],
    ),
    "lower above upper": (
        lambda p: p.control_bounds(np.full(6, 1.0), np.full(6, -1.0)),
        ["control_bounds.lower[0]", "control_bounds.upper[0]"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_inputs_are_invalid_arguments_naming_the_field(
    client: torqued.Client, arm: model_pb2.Model, case: str
) -> None:
    spoil, named = BAD_INPUTS[case]
    problem = reach_problem(arm)
    spoil(problem)
    with pytest.raises(torqued.Error) as refused:
        client.solve(problem)
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.method == "ControlService/Solve"
    for part in named:
        assert part in refused.value.message, refused.value.message


def test_an_unknown_model_is_not_found(client: torqued.Client) -> None:
    with pytest.raises(torqued.Error) as refused:
        client.solve(reach_problem("0" * 32))
    assert refused.value.code == grpc.StatusCode.NOT_FOUND


def test_mpc_closes_the_loop_through_simulate_and_follows_a_new_target(
    client: torqued.Client, arm: model_pb2.Model
) -> None:
    # The target weighed along the way as at the end: a receding horizon that weighs it only at
    # its end keeps putting the reach off (measured: still 34 mm away after 3 s).
    problem = reach_problem(arm, reach_weight=1e3)
    reached = client.solve(problem, feedback=True)
    q, v = ARM_Q0.copy(), np.zeros(arm.nv)
    with client.mpc(problem, plan=True) as mpc:
        step = mpc.first
        # The first answer is Solve's on the same problem.
        np.testing.assert_array_equal(step.u0, reached.u[0])
        assert reached.feedback is not None
        np.testing.assert_array_equal(step.feedback0, reached.feedback[0])
        np.testing.assert_array_equal(step.solution.q, reached.q)
        # The plant: Simulate's semi-implicit Euler at 1 ms, u0 held over each knot.
        for k in range(1, 31):
            run = client.simulate(arm.id, q, v, 50, time_step=ARM_DT / 50, tau=step.u0)
            q, v = run.q[-1], run.v[-1]
            step = mpc.tick(q, v, k * ARM_DT)
            assert step.shift == 1 and len(step.solution.iterations) == 1
            assert step.solution.q.shape == (0, 0) and step.solution.feedback is None
        reached_at = client.kinematics(arm.id, q, frames=[ARM_FRAME]).positions[0]
        # Measured: 0.6 mm after 1.5 s.
        assert np.linalg.norm(reached_at - ARM_TARGET) < 2e-3

        with pytest.raises(torqued.Error) as early:
            mpc.tick(q, v, 0.0)
        assert early.value.code == grpc.StatusCode.INVALID_ARGUMENT and "time" in str(early.value)

        target = ARM_TARGET + np.array([0.0, -0.1, 0.05])
        steered = mpc.tick(
            q, v, 31 * ARM_DT, iterations=30, plan=True,
            updates=[torqued.term_update(name, reference=target)
                     for name in ("reach", "final_reach")],
        )
        assert steered.solution.q.shape == (ARM_KNOTS + 1, arm.nq)
        planned = client.kinematics(arm.id, steered.solution.q[-1], frames=[ARM_FRAME])
        assert np.linalg.norm(planned.positions[0] - target) < 1e-3
