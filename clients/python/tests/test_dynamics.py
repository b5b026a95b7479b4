"""DynamicsService through the client: values against known ones and closed forms, the
identities that tie the RPCs together, and the shapes of batches and single states.

Tolerances are the project's 1e-9 relative bar (support.assert_close) unless said otherwise.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import grpc
import numpy as np
import pytest

import torqued
from conftest import TorquedProcess
from support import PLANAR_ARM_DH, PLANAR_ARM_SPEC, PLANAR_GRAVITY, assert_close, random_states
from torqued.v1 import dynamics_pb2, dynamics_pb2_grpc, model_pb2

BUNDLED = ["double_pendulum", "puma560", "quadruped", "stanford_arm"]


@pytest.fixture(scope="session")
def layouts(client: torqued.Client, bundled: dict[str, str]) -> dict[str, model_pb2.Model]:
    return {name: client.get_model(model_id) for name, model_id in bundled.items()}


def test_stanford_arm_gravity_matches_the_cpp_example_client(
    client: torqued.Client, bundled: dict[str, str]
) -> None:
    tau = client.gravity(bundled["stanford_arm"], [0.3, -0.6, 0.5, 0.8, -0.4, 0.2])
    # What server/example_client.cpp prints for the same q (10 significant digits, so the
    # comparison is to 1e-9 of the largest torque).
    printed = [-1.776356839e-15, 9.398032228, 41.29236615, 0.06653684444, 0.2884208611, 0.0]
    assert tau.shape == (6,)
    assert_close(tau, np.array(printed))


@pytest.mark.parametrize("source", ["spec", "dh"])
def test_planar_arm_matches_its_closed_form_equations_of_motion(
    client: torqued.Client, source: str
) -> None:
    if source == "spec":
        model = client.register(spec=PLANAR_ARM_SPEC, name="planar_arm", gravity=PLANAR_GRAVITY)
    else:
        model = client.register(dh=PLANAR_ARM_DH, name="planar_arm_dh", gravity=PLANAR_GRAVITY)
    # Link lengths, centre-of-mass distances, masses and z inertias about the centres of mass.
    l1, c1, c2, m1, m2, i1, i2, g = 0.7, 0.3, 0.25, 2.0, 1.5, 0.05, 0.03, 9.81
    rng = np.random.default_rng(7)
    q, v, a = (rng.uniform(-2.0, 2.0, (5, 2)) for _ in range(3))
    cos2, sin2 = np.cos(q[:, 1]), np.sin(q[:, 1])
    m11 = i1 + i2 + m1 * c1**2 + m2 * (l1**2 + c2**2 + 2 * l1 * c2 * cos2)
    m12 = i2 + m2 * (c2**2 + l1 * c2 * cos2)
    m22 = np.full(5, i2 + m2 * c2**2)
    mass = np.stack([np.stack([m11, m12], -1), np.stack([m12, m22], -1)], -2)
    h = m2 * l1 * c2 * sin2
    g2 = m2 * c2 * g * np.cos(q[:, 0] + q[:, 1])
    gravity = np.stack([(m1 * c1 + m2 * l1) * g * np.cos(q[:, 0]) + g2, g2], -1)
    coriolis = np.stack([-h * (2 * v[:, 0] * v[:, 1] + v[:, 1] ** 2), h * v[:, 0] ** 2], -1)
    tau = np.einsum("nij,nj->ni", mass, a) + coriolis + gravity

    assert_close(client.mass_matrix(model.id, q), mass)
    assert_close(client.gravity(model.id, q), gravity)
    assert_close(client.nonlinear_effects(model.id, q, v), coriolis + gravity)
    assert_close(client.inverse_dynamics(model.id, q, v, a), tau)
    assert_close(client.forward_dynamics(model.id, q, v, tau), a)


@pytest.mark.parametrize("name", BUNDLED)
def test_equations_of_motion_agree_across_rpcs(
    client: torqued.Client, layouts: dict[str, model_pb2.Model], name: str
) -> None:
    model = layouts[name]
    q, v, a = random_states(model, 5, seed=11)
    mass, inverse = client.mass_matrix(model.id, q, inverse=True)
    nle = client.nonlinear_effects(model.id, q, v)
    tau = client.inverse_dynamics(model.id, q, v, a)
    assert tau.shape == (5, model.nv) and mass.shape == (5, model.nv, model.nv)
    # tau = M(q) a + C(q, v) v + g(q)
    assert_close(tau, np.einsum("nij,nj->ni", mass, a) + nle)
    assert_close(
        np.einsum("nij,njk->nik", mass, inverse), np.broadcast_to(np.eye(model.nv), mass.shape)
    )
    assert_close(client.inverse_dynamics(model.id, q, v, a, algorithm="lagrange_homogeneous"), tau)
    assert_close(client.mass_matrix(model.id, q, algorithm="lagrange_homogeneous"), mass)
    # Forward dynamics inverts inverse dynamics, by every algorithm.
    for algorithm in ("aba", "crba", "factorization", "auto"):
        assert_close(client.forward_dynamics(model.id, q, v, tau, algorithm=algorithm), a)
    # C(q, v) v = nle - g(q).
    coriolis = client.coriolis_matrix(model.id, q, v)
    assert_close(np.einsum("nij,nj->ni", coriolis, v), nle - client.gravity(model.id, q))


@pytest.mark.parametrize("name", BUNDLED)
def test_derivatives_end_in_the_mass_matrix_and_its_inverse(
    client: torqued.Client, layouts: dict[str, model_pb2.Model], name: str
) -> None:
    model = layouts[name]
    q, v, a = random_states(model, 3, seed=12)
    mass, inverse = client.mass_matrix(model.id, q, inverse=True)
    of_inverse = client.derivatives(model.id, q, v, a=a)
    assert of_inverse.d_dq.shape == of_inverse.d_dv.shape == (3, model.nv, model.nv)
    assert_close(of_inverse.d_du, mass)
    tau = client.inverse_dynamics(model.id, q, v, a)
    of_forward = client.derivatives(model.id, q, v, tau=tau)
    assert_close(of_forward.d_du, inverse, rel=1e-8)
    # da/dv = -M^-1 dtau/dv at the same state (the implicit function theorem), 1e-8 as the
    # project's bar for derivatives.
    assert_close(of_forward.d_dv, -np.einsum("nij,njk->nik", inverse, of_inverse.d_dv), rel=1e-8)
    with pytest.raises(ValueError):
        client.derivatives(model.id, q, v)


@pytest.mark.parametrize("name", BUNDLED)
def test_linearize_is_the_semi_implicit_step_of_forward_dynamics(
    client: torqued.Client, layouts: dict[str, model_pb2.Model], name: str
) -> None:
    model = layouts[name]
    nv, dt = model.nv, 0.01
    q, v, tau = random_states(model, 3, seed=21)
    result = client.linearize(model.id, q, v, tau, dt=dt, continuous_derivatives=True)
    assert result.q_next.shape == (3, model.nq)
    assert result.fx.shape == (3, 2 * nv, 2 * nv) and result.fu.shape == (3, 2 * nv, nv)
    a = client.forward_dynamics(model.id, q, v, tau)
    assert_close(result.v_next, v + dt * a)
    # The v+ rows are those of v + dt a: I + dt da/dv, dt da/dq and dt da/dtau.
    assert_close(result.fx[:, nv:, :nv], dt * result.da_dq)
    assert_close(result.fx[:, nv:, nv:], np.eye(nv) + dt * result.da_dv)
    assert_close(result.fu[:, nv:, :], dt * result.da_dtau)
    assert_close(result.da_dtau, client.mass_matrix(model.id, q, inverse=True)[1], rel=1e-8)


def test_linearize_actuations_select_the_columns_of_fu(
    client: torqued.Client, layouts: dict[str, model_pb2.Model]
) -> None:
    model = layouts["quadruped"]
    q, v, tau = random_states(model, 2, seed=22)
    # With the root unactuated its six torques are zero: the same step from u = tau[6:].
    tau[:, :6] = 0.0
    every = client.linearize(model.id, q, v, tau, dt=0.01)
    legs = client.linearize(model.id, q, v, tau[:, 6:], dt=0.01, actuation="unactuated_root")
    assert legs.fu.shape == (2, 36, 12)
    assert_close(legs.q_next, every.q_next)
    assert_close(legs.fx, every.fx)
    assert_close(legs.fu, every.fu[:, :, 6:])
    # Named joints drive their DOFs in the order named: the same step as every DOF driven with
    # zero torque elsewhere.
    layout = {joint.name: joint.idx_v for joint in model.joints}
    knees = [layout["HR_knee"], layout["FL_knee"]]
    knee_torques = np.array([[1.5, -2.0], [0.5, 3.0]])
    only_knees = np.zeros_like(tau)
    only_knees[:, knees] = knee_torques
    every = client.linearize(model.id, q, v, only_knees, dt=0.01)
    named = client.linearize(
        model.id, q, v, knee_torques, dt=0.01, actuation=["HR_knee", "FL_knee"]
    )
    assert_close(named.fx, every.fx)
    assert_close(named.fu, every.fu[:, :, knees])
    with pytest.raises(torqued.Error) as refused:
        client.linearize(model.id, q, v, tau, dt=0.0)
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT and "dt" in str(refused.value)


def test_linearize_in_contact_is_the_step_of_constrained_dynamics(
    client: torqued.Client, layouts: dict[str, model_pb2.Model]
) -> None:
    model = layouts["quadruped"]
    nv, dt = model.nv, 0.01
    q, v, tau = random_states(model, 3, seed=23)
    feet = [
        {"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": foot}}
        for foot in ("FL_foot", "FR_foot", "HL_foot", "HR_foot")
    ]
    result = client.linearize(
        model.id, q, v, tau, dt=dt, constraints=feet, continuous_derivatives=True
    )
    held = client.constrained_dynamics(model.id, q, v, tau, constraints=feet)
    # ConstrainedDynamics solves through CRBA's factors, Linearize through ABA's: rounding apart.
    assert_close(result.v_next, v + dt * held.a, rel=1e-8)
    assert [row.name for row in result.rows] == [row.name for row in held.rows]
    assert result.multipliers.shape == (3, 12) and result.dmultipliers_dq.shape == (3, 12, nv)
    assert_close(result.multipliers, held.multipliers, rel=1e-8)
    assert_close(result.fx[:, nv:, :nv], dt * result.da_dq)
    derivatives = client.constrained_dynamics_derivatives(model.id, q, v, tau, constraints=feet)
    assert_close(derivatives.da_dq, result.da_dq)
    assert_close(derivatives.da_dtau, result.da_dtau)
    assert_close(derivatives.multipliers, result.multipliers)
    assert_close(derivatives.dmultipliers_dv, result.dmultipliers_dv)
    assert_close(derivatives.dmultipliers_dtau, result.dmultipliers_dtau)
    # Free, the multipliers are absent.
    free = client.linearize(model.id, q, v, tau, dt=dt, continuous_derivatives=True)
    assert free.multipliers is None and free.rows == []



@pytest.fixture(scope="module")
def dense_stub(server: TorquedProcess) -> Iterator[dynamics_pb2_grpc.DynamicsServiceStub]:
    """DynamicsService without the client: the server's answers as the proto gives them."""
    with grpc.insecure_channel(server.address) as channel:
        yield dynamics_pb2_grpc.DynamicsServiceStub(channel)


@pytest.mark.parametrize("integrator", ["semi_implicit_euler", "explicit_euler"])
def test_fx_and_fu_assembled_from_the_velocity_rows_are_the_engines_full_jacobians(
    client: torqued.Client,
    layouts: dict[str, model_pb2.Model],
    dense_stub: dynamics_pb2_grpc.DynamicsServiceStub,
    integrator: str,
) -> None:
    # The client's linearize and rollout ask for the Euler steps' v+ rows and the free-flyer's
    # blocks of J_q and J_w (STEP_JACOBIANS_VELOCITY_ROWS) and assemble Fx and Fu; the server's
    # STEP_JACOBIANS_DENSE answer is the engine's Fx and Fu in full. The v+ rows are the same
    # numbers; the q+ rows agree to the rounding of the 6 x 6 products (numpy's against the
    # engine's): within 1e-15 of the largest entry.
    model = layouts["quadruped"]
    nv, nu, dt, knots = model.nv, model.nv - 6, 0.01, 3
    q, v, tau = random_states(model, knots, seed=26)
    step = {"dt": dt, "integrator": integrator, "actuation": "unactuated_root"}
    proto_step = {
        "model_id": model.id,
        "dt": dt,
        "integrator": dynamics_pb2.Integrator.Value(f"INTEGRATOR_{integrator.upper()}"),
        "actuation": dynamics_pb2.Actuation(kind=dynamics_pb2.ACTUATION_KIND_UNACTUATED_ROOT),
    }

    def assert_engines(fx: np.ndarray, fu: np.ndarray, full: Any) -> None:
        full_fx = np.array(full.fx).reshape(fx.shape)
        full_fu = np.array(full.fu).reshape(fu.shape)
        np.testing.assert_array_equal(fx[..., nv:, :], full_fx[..., nv:, :])
        np.testing.assert_array_equal(fu[..., nv:, :], full_fu[..., nv:, :])
        np.testing.assert_allclose(fx, full_fx, rtol=0, atol=1e-15 * np.abs(full_fx).max())
        np.testing.assert_allclose(fu, full_fu, rtol=0, atol=1e-15 * np.abs(full_fu).max())

    linearized = client.linearize(model.id, q, v, tau[:, 6:], **step)
    full = dense_stub.Linearize(
        dynamics_pb2.LinearizeRequest(
            **proto_step,
            batch_size=knots,
            q=q.ravel(),
            v=v.ravel(),
            u=tau[:, 6:].ravel(),
            jacobians=dynamics_pb2.STEP_JACOBIANS_DENSE,
        )
    )
    assert len(full.fx) == knots * 4 * nv * nv and not full.dv_next_dx
    assert_engines(linearized.fx, linearized.fu, full)
    np.testing.assert_array_equal(linearized.q_next.ravel(), full.q_next)

    # Two rollouts of `knots` steps.
    controls = np.stack([tau[:, 6:], -tau[:, 6:]])
    rolled = client.rollout(model.id, q[:2], v[:2], controls, jacobians=True, **step)
    full = dense_stub.Rollout(
        dynamics_pb2.RolloutRequest(
            **proto_step,
            batch_size=2,
            q=q[:2].ravel(),
            v=v[:2].ravel(),
            knots=knots,
            u=controls.ravel(),
            jacobians=True,
            jacobian_layout=dynamics_pb2.STEP_JACOBIANS_DENSE,
        )
    )
    assert list(full.steps) == [knots, knots] and not full.dv_next_dx
    assert rolled.fx.shape == (2, knots, 2 * nv, 2 * nv) and rolled.fu.shape == (2, knots, 2 * nv, nu)
    assert_engines(rolled.fx, rolled.fu, full)
    # The velocity rows are read in place from the received bytes (read-only); what the client
    # hands out is its own.
    for array in (linearized.q_next, linearized.v_next, linearized.fx, linearized.fu, rolled.fx):
        assert array.flags.writeable


def test_rollout_chains_linearize_steps_with_feedback(
    client: torqued.Client, layouts: dict[str, model_pb2.Model]
) -> None:
    model = layouts["quadruped"]
    nv, dt, knots = model.nv, 0.01, 4
    q, v, _ = random_states(model, 2, seed=24)
    rng = np.random.default_rng(25)
    u = rng.uniform(-2.0, 2.0, (2, knots, nv - 6))
    feet = [
        {"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": foot}}
        for foot in ("FL_foot", "FR_foot", "HL_foot", "HR_foot")
    ]
    step = {"dt": dt, "actuation": "unactuated_root", "constraints": feet}
    # The nominal: rollout 0 open loop; the feedback then acts on rollout 1's distance from it.
    nominal = client.rollout(model.id, q[0], v[0], u[0], **step)
    assert nominal.q.shape == (knots + 1, model.nq) and nominal.fx is None
    gains = rng.uniform(-0.5, 0.5, (knots, nv - 6, 2 * nv))
    out = client.rollout(
        model.id,
        q,
        v,
        u,
        **step,
        q_nominal=nominal.q[:knots],
        v_nominal=nominal.v[:knots],
        feedback=gains,
        jacobians=True,
        frames=["FL_foot"],
        frame_jacobians=True,
    )
    assert out.q.shape == (2, knots + 1, model.nq) and out.u.shape == (2, knots, nv - 6)
    assert out.fx.shape == (2, knots, 2 * nv, 2 * nv) and out.multipliers.shape == (2, knots, 12)
    assert out.frame_jacobians.shape == (2, knots + 1, 1, 6, nv)
    # On the nominal itself the feedback adds nothing; Jacobians and states are linearize's.
    assert_close(out.u[0], u[0])
    assert_close(out.q[0], nominal.q)
    knot = client.linearize(model.id, out.q[1, :knots], out.v[1, :knots], out.u[1], **step)
    assert_close(out.fx[1], knot.fx)
    assert_close(out.fu[1], knot.fu)
    assert_close(out.q[1, 1:], knot.q_next)
    # Rollout 1 starts elsewhere, and the feedback moves its controls.
    assert np.abs(out.u[1] - u[1]).max() > 1e-3
    kinematics = client.kinematics(model.id, out.q[1], frames=["FL_foot"], jacobians=True)
    assert_close(out.frame_positions[1, :, 0], kinematics.positions[:, 0])
    assert_close(out.frame_jacobians[1, :, 0], kinematics.jacobians[:, 0])
    with pytest.raises(ValueError, match="all three or none"):
        client.rollout(model.id, q, v, u, **step, feedback=gains)
    # A rollout driven away stops there; its Jacobians past its steps are zeros, as its states.
    wild = u.copy()
    wild[1, 1] = 1e300
    away = client.rollout(model.id, q, v, wild, **step, jacobians=True)
    assert away.steps[0] == knots and 0 < away.steps[1] < knots
    assert_close(away.fx[0], client.rollout(model.id, q[0], v[0], u[0], **step, jacobians=True).fx)
    assert away.fx[1, away.steps[1] - 1].any()
    assert not away.fx[1, away.steps[1] :].any() and not away.fu[1, away.steps[1] :].any()

def test_phased_rollout_and_linearize_cross_a_touchdown(
    client: torqued.Client, layouts: dict[str, model_pb2.Model]
) -> None:
    model = layouts["quadruped"]
    nv, dt, knots = model.nv, 0.01, 6
    q, v, _ = random_states(model, 2, seed=26)
    u = np.random.default_rng(27).uniform(-2.0, 2.0, (2, knots, nv - 6))
    foot = {
        f: {"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": f}}
        for f in ("FL_foot", "FR_foot", "HL_foot", "HR_foot")
    }
    four = list(foot.values())
    diagonal = [foot["FL_foot"], foot["HR_foot"]]
    # A trot's phases: four feet, the FL-HR diagonal from knot 2, four again (a touchdown of FR
    # and HL) from knot 4.
    phases = [(0, four), (2, diagonal), (4, four, 0.1)]
    step = {"dt": dt, "actuation": "unactuated_root", "phases": phases, "friction_cone": 0.7}
    out = client.rollout(model.id, q, v, u, **step, jacobians=True)
    assert out.multipliers is None and len(out.knots) == 2
    knot_values = out.knots[1]
    assert [m.shape for m in knot_values.multipliers] == [(12,), (12,), (6,), (6,), (12,), (12,)]
    assert list(knot_values.impulses) == [4] and knot_values.impulses[4].shape == (12,)
    assert knot_values.friction_cones[2].shape == (2, 5)
    assert knot_values.dfriction_cones_dx[4].shape == (4, 5, 2 * nv)
    assert knot_values.dfriction_cones_du[0].shape == (4, 5, nv - 6)
    assert [len(rows) for rows in knot_values.phase_rows] == [4, 2, 4]
    # Linearize at rollout 1's knots: the same steps, the same forces and impulses.
    lin = client.linearize(
        model.id, out.q[1, :knots], out.v[1, :knots], out.u[1], **step, continuous_derivatives=True
    )
    assert_close(lin.q_next, out.q[1, 1:])
    assert_close(lin.fx, out.fx[1])
    for k in range(knots):
        assert_close(lin.knots.multipliers[k], knot_values.multipliers[k])
        assert_close(lin.knots.friction_cones[k], knot_values.friction_cones[k])
        assert lin.knots.dmultipliers_dq[k].shape == (knot_values.multipliers[k].size, nv)
    assert_close(lin.knots.impulses[4], knot_values.impulses[4])
    with pytest.raises(torqued.Error) as refused:
        client.linearize(
            model.id, q, v, u[:, 0], dt=dt, actuation="unactuated_root", phases=[(1, four)]
        )
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "phases[0].first_knot" in refused.value.message


@pytest.mark.parametrize("name", BUNDLED)
def test_hybrid_dynamics_between_forward_and_inverse(
    client: torqued.Client, layouts: dict[str, model_pb2.Model], name: str
) -> None:
    model = layouts[name]
    q, v, a = random_states(model, 4, seed=13)
    tau = client.inverse_dynamics(model.id, q, v, a)
    given = np.arange(model.nv) % 2 == 0
    # With a where given and tau elsewhere (zeros in the unread slots), the complete solution
    # is (a, tau) of inverse dynamics.
    result = client.hybrid_dynamics(
        model.id, q, v, given, np.where(given, a, 0.0), np.where(given, 0.0, tau)
    )
    assert_close(result.a, a)
    assert_close(result.tau, tau)
    forward = client.hybrid_dynamics(model.id, q, v, np.zeros(model.nv, bool), a, tau)
    assert_close(forward.a, a)


def test_floating_base_inverse_dynamics(
    client: torqued.Client, layouts: dict[str, model_pb2.Model]
) -> None:
    model = layouts["quadruped"]
    q, v, a = random_states(model, 4, seed=14)
    result = client.floating_base_inverse_dynamics(model.id, q, v, a)
    assert np.array_equal(result.tau[:, :6], np.zeros((4, 6)))
    assert np.array_equal(result.a[:, 6:], a[:, 6:])
    # The base acceleration makes the root's force zero: inverse dynamics agrees.
    assert_close(client.inverse_dynamics(model.id, q, v, result.a), result.tau)
    with pytest.raises(torqued.Error) as error:
        fixed = layouts["stanford_arm"]
        client.floating_base_inverse_dynamics(fixed.id, *random_states(fixed, 1, seed=1))
    assert error.value.code == grpc.StatusCode.FAILED_PRECONDITION


@pytest.mark.parametrize("name", BUNDLED)
def test_kinematics_and_centroidal_are_consistent(
    client: torqued.Client, layouts: dict[str, model_pb2.Model], name: str
) -> None:
    model = layouts[name]
    q, v, _ = random_states(model, 3, seed=15)
    frames = len(model.frames)
    for reference in ("local", "local_world_aligned", "world"):
        kin = client.kinematics(model.id, q, v, reference=reference, jacobians=True)
        assert kin.frames == [f.name for f in model.frames]
        assert kin.positions.shape == (3, frames, 3)
        assert kin.jacobians is not None and kin.jacobians.shape == (3, frames, 6, model.nv)
        # Rotation matrices are orthonormal; twists are J v.
        assert_close(
            np.einsum("nfji,nfjk->nfik", kin.rotations, kin.rotations),
            np.broadcast_to(np.eye(3), kin.rotations.shape),
        )
        assert_close(kin.velocities, np.einsum("nfij,nj->nfi", kin.jacobians, v))
    one = client.kinematics(model.id, q, frames=[model.frames[-1].name])
    assert one.velocities is None and one.jacobians is None
    assert one.positions.shape == (3, 1, 3)

    centroidal = client.centroidal(model.id, q, v)
    # Over the moving bodies: the fixed root (bodies[0]) carries no momentum, as in Pinocchio.
    mass = sum(body.mass for body in model.bodies[1:])
    assert centroidal.com.shape == (3, 3)
    assert_close(centroidal.com_velocity, np.einsum("nij,nj->ni", centroidal.com_jacobian, v))
    assert_close(centroidal.momentum, np.einsum("nij,nj->ni", centroidal.momentum_matrix, v))
    # The linear momentum is the total mass times the centre of mass velocity.
    assert_close(centroidal.momentum_matrix[:, :3], mass * centroidal.com_jacobian)


def _every_rpc(model: model_pb2.Model) -> list[tuple[str, Callable[..., Any]]]:
    """(name, call on a batch (q, v, a)) for every RPC that takes states."""
    given = np.arange(model.nv) % 2 == 0
    calls: list[tuple[str, Callable[..., Any]]] = [
        ("inverse_dynamics", lambda c, q, v, a: c.inverse_dynamics(model.id, q, v, a)),
        ("forward_dynamics", lambda c, q, v, a: c.forward_dynamics(model.id, q, v, a)),
        ("mass_matrix", lambda c, q, v, a: c.mass_matrix(model.id, q, inverse=True)),
        ("nonlinear_effects", lambda c, q, v, a: c.nonlinear_effects(model.id, q, v)),
        ("gravity", lambda c, q, v, a: c.gravity(model.id, q)),
        ("kinematics", lambda c, q, v, a: c.kinematics(model.id, q, v, jacobians=True)),
        ("hybrid_dynamics", lambda c, q, v, a: c.hybrid_dynamics(model.id, q, v, given, a, a)),
        ("derivatives", lambda c, q, v, a: c.derivatives(model.id, q, v, tau=a)),
        ("coriolis_matrix", lambda c, q, v, a: c.coriolis_matrix(model.id, q, v)),
        ("centroidal", lambda c, q, v, a: c.centroidal(model.id, q, v)),
    ]
    if model.base == model_pb2.BASE_TYPE_FLOATING:
        calls.append(
            (
                "floating_base_inverse_dynamics",
                lambda c, q, v, a: c.floating_base_inverse_dynamics(model.id, q, v, a),
            )
        )
    return calls


def _arrays(result: Any) -> list[np.ndarray]:
    if isinstance(result, np.ndarray):
        return [result]
    if isinstance(result, tuple):
        return list(result)
    return [x for x in vars(result).values() if isinstance(x, np.ndarray)]


@pytest.mark.parametrize("name", ["stanford_arm", "quadruped"])
def test_a_single_state_gives_the_batch_row_without_its_axis(
    client: torqued.Client, layouts: dict[str, model_pb2.Model], name: str
) -> None:
    model = layouts[name]
    q, v, a = random_states(model, 4, seed=16)
    for rpc, call in _every_rpc(model):
        batch = _arrays(call(client, q, v, a))
        single = _arrays(call(client, q[2], v[2], a[2]))
        assert len(batch) == len(single), rpc
        for b, s in zip(batch, single):
            assert b.shape == (4, *s.shape), rpc
            # The server computes each state alone: the same bits whatever the batch.
            assert np.array_equal(b[2], s), rpc


def test_shape_errors(client: torqued.Client, layouts: dict[str, model_pb2.Model]) -> None:
    model = layouts["stanford_arm"]
    q, v, a = random_states(model, 2, seed=17)
    with pytest.raises(ValueError, match="v:"):
        client.inverse_dynamics(model.id, q, v[0], a)
    with pytest.raises(ValueError, match="a:"):
        client.inverse_dynamics(model.id, q, v, a[:1])
    with pytest.raises(ValueError, match="q:"):
        client.gravity(model.id, np.zeros((0, model.nq)))
    # Widths are the server's to check: INVALID_ARGUMENT naming the field.
    with pytest.raises(torqued.Error) as error:
        client.inverse_dynamics(model.id, q, v[:, :5], a)
    assert error.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "v" in error.value.message
    with pytest.raises(ValueError, match="algorithm"):
        client.forward_dynamics(model.id, q, v, a, algorithm="euler")  # type: ignore[arg-type]


def test_echo_returns_the_same_bits(client: torqued.Client) -> None:
    values = np.array([0.1, -0.0, 1e-310, np.inf, np.nan, np.pi, -1.5e300])
    payload, echoed = client.echo(b"\x00torqued\xff", values)
    assert payload == b"\x00torqued\xff"
    assert echoed.tobytes() == values.tobytes()
