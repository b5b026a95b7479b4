"""ConstrainedDynamics, ContactDynamics, Impact and Simulate through the client: values against
closed forms and against the unconstrained RPCs, shapes of batches and single states.

Tolerances are the project's 1e-9 relative bar (support.assert_close) unless said otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest

import torqued
from support import assert_close, random_states
from torqued.v1 import dynamics_pb2, model_pb2

FEET = ["FL_foot", "FR_foot", "HL_foot", "HR_foot"]
SOLVED = dynamics_pb2.CONTACT_SOLVER_STATUS_SOLVED


@pytest.fixture(scope="module")
def quadruped(client: torqued.Client, bundled: dict[str, str]) -> model_pb2.Model:
    return client.get_model(bundled["quadruped"])


def test_constrained_inverse_dynamics_inverts_forward(
    client: torqued.Client, bundled: dict[str, str]
) -> None:
    # The four-bar has one degree of freedom: with the crank's acceleration (from the forward
    # call) given and the passive joints' forces as they were, the inverse call must find the
    # crank's force again and the same accelerations.
    model = client.get_model(bundled["four_bar"])
    q, v, tau = random_states(model, 3, seed=61)
    forward = client.constrained_dynamics(model.id, q, v, tau)
    assert forward.a.shape == (3, model.nv) and forward.tau is None
    assert forward.multipliers.shape == (3, sum(r.dimension for r in forward.rows))
    inverse = client.constrained_dynamics(
        model.id,
        q,
        v,
        np.where([False, True, True], tau, 0.0),
        mode="inverse",
        a=np.where([True, False, False], forward.a, 0.0),
        acceleration_given=[True, False, False],
    )
    assert_close(inverse.a, forward.a)
    assert_close(inverse.tau, tau)
    assert_close(inverse.multipliers, forward.multipliers)
    with pytest.raises(ValueError, match="inverse"):
        client.constrained_dynamics(model.id, q, v, tau, a=forward.a)


def test_contact_dynamics_without_contacts_is_forward_dynamics(
    client: torqued.Client, quadruped: model_pb2.Model
) -> None:
    q, v, tau = random_states(quadruped, 3, seed=62)
    free = client.contact_dynamics(quadruped.id, q, v, tau, [])
    assert_close(free.result, client.forward_dynamics(quadruped.id, q, v, tau))
    assert free.contact.shape == (3, 0, 3) and free.modes.shape == (3, 0)


def test_contacts_and_impacts_on_the_feet(
    client: torqued.Client, quadruped: model_pb2.Model
) -> None:
    q, v, tau = random_states(quadruped, 3, seed=63)
    contacts = [{"frame": foot, "friction": 0.8} for foot in FEET]
    held = client.contact_dynamics(quadruped.id, q, v, tau, contacts)
    assert held.result.shape == (3, quadruped.nv) and held.contact.shape == (3, 4, 3)
    assert held.status.tolist() == [SOLVED] * 3
    # A plastic impact of frictionless contacts leaves no foot moving into the floor, and a
    # pushing (never pulling) impulse.
    message = [dynamics_pb2.PointContact(frame=foot) for foot in FEET[:2]]
    single = client.impact(quadruped.id, q[0], v[0], message)
    assert single.result.shape == (quadruped.nv,) and single.contact.shape == (2, 3)
    assert single.status == SOLVED
    assert np.all(single.contact[:, 2] >= 0.0)
    batch = client.impact(quadruped.id, q, v, message)
    assert np.array_equal(batch.result[0], single.result)


def test_free_fall_follows_semi_implicit_euler(
    client: torqued.Client, quadruped: model_pb2.Model
) -> None:
    # Released at rest without contacts or torques, the robot falls as one body: after step k
    # of semi-implicit Euler, the base's velocity is -g k h and its height z0 - g h² k(k+1)/2,
    # joints unmoved.
    q0 = np.zeros(quadruped.nq)
    q0[2], q0[6] = 1.0, 1.0  # height 1 m, identity quaternion (x, y, z, w)
    steps, h, g = 50, 2e-3, 9.81
    run = client.simulate(quadruped.id, q0, np.zeros(quadruped.nv), steps, time_step=h)
    assert run.q.shape == (steps, quadruped.nq) and run.v.shape == (steps, quadruped.nv)
    k = np.arange(1, steps + 1)
    expected_v = np.zeros((steps, quadruped.nv))
    expected_v[:, 2] = -g * k * h
    expected_q = np.tile(q0, (steps, 1))
    expected_q[:, 2] = 1.0 - g * h * h * k * (k + 1) / 2
    assert_close(run.v, expected_v)
    assert_close(run.q, expected_q)
    assert run.status == SOLVED and run.max_contacts == 0
    with pytest.raises(ValueError, match="tau"):
        client.simulate(quadruped.id, q0, np.zeros(quadruped.nv), 3, tau=np.zeros((2, 3, 4, 5)))
