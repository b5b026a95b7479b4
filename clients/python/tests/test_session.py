"""Session streams through the client: replies in the order sent, each as its unary call's (bit
for bit), failures answered in place while the stream goes on, models switched mid-stream, the
deadline bounding the stream, and cancellation on an exception."""

from __future__ import annotations

import time

import grpc
import numpy as np
import pytest

import torqued
from support import random_states


def test_replies_come_in_order_as_the_unary_calls(
    client: torqued.Client, bundled: dict[str, str]
) -> None:
    model = client.get_model(bundled["quadruped"])
    q, v, a = random_states(model, 3, seed=41)
    with client.session(model_id=model.id) as session:
        sent = [
            session.send("Gravity", q=q),
            session.send(
                "InverseDynamics", q=q, v=v, a=a, algorithm="INVERSE_DYNAMICS_ALGORITHM_RNEA"
            ),
            session.send("Gravity", q=q[:, :4]),  # 4 numbers a state where 19 are due
            session.send("MassMatrix", q=q[0]),  # a single state
            session.send("Echo", payload=b"hi", values=[1.0, 2.5]),
        ]
        session.close()
        replies = list(session)
    assert [r.sequence for r in replies] == sent
    assert [r.method for r in replies] == [
        "Gravity",
        "InverseDynamics",
        "Gravity",
        "MassMatrix",
        "Echo",
    ]
    gravity, inverse, failed, mass, echo = replies
    assert gravity.error is None and inverse.error is None
    assert gravity.response.tau.tobytes() == client.gravity(model.id, q).tobytes()
    assert gravity.response.tau.shape == (3, model.nv)
    assert inverse.response.tau.tobytes() == client.inverse_dynamics(model.id, q, v, a).tobytes()
    assert failed.response is None
    assert failed.error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "q" in failed.error.message
    assert mass.response.batch_size == 1
    assert mass.response.mass_matrix.shape == (model.nv * model.nv,)
    assert np.array_equal(
        mass.response.mass_matrix.reshape(model.nv, model.nv), client.mass_matrix(model.id, q[0])
    )
    assert echo.response.payload == b"hi"
    assert echo.response.values.tolist() == [1.0, 2.5]


def test_a_message_may_switch_the_streams_model(
    client: torqued.Client, bundled: dict[str, str]
) -> None:
    quadruped = client.get_model(bundled["quadruped"])
    pendulum = client.get_model(bundled["double_pendulum"])
    q_quadruped, _, _ = random_states(quadruped, 2, seed=42)
    q_pendulum, _, _ = random_states(pendulum, 2, seed=43)
    with client.session() as session:
        session.send("Gravity", q=q_pendulum, model_id=pendulum.id)
        session.send("Gravity", q=q_pendulum)  # the stream's model: the pendulum
        session.send("Gravity", q=q_quadruped, model_id=quadruped.id)
        first, second, third = next(session), next(session), next(session)
    assert first.response.tau.shape == second.response.tau.shape == (2, 2)
    assert third.response.tau.tobytes() == client.gravity(quadruped.id, q_quadruped).tobytes()


def test_the_deadline_bounds_the_stream(client: torqued.Client) -> None:
    start = time.monotonic()
    session = client.session(timeout=0.5)
    session.send("Echo", values=[1.0])
    assert next(session).response.values.tolist() == [1.0]
    with pytest.raises(torqued.Error) as failure:
        next(session)  # nothing more was sent: the stream waits out its deadline
    assert failure.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    # Generous: the deadline is 0.5 s; the bound only says it was the deadline that ended it.
    assert time.monotonic() - start < 20.0


def test_an_exception_cancels_the_stream(client: torqued.Client) -> None:
    with pytest.raises(RuntimeError):
        with client.session() as session:
            session.send("Echo", values=[1.0])
            raise RuntimeError("the control loop stopped")
    with pytest.raises(torqued.Error) as failure:
        next(session)
    assert failure.value.code == grpc.StatusCode.CANCELLED
    with pytest.raises(ValueError):
        session.send("Echo", values=[2.0])


def test_send_checks_the_method(client: torqued.Client) -> None:
    with client.session() as session:
        with pytest.raises(ValueError, match="Session"):
            session.send("Session")
        with pytest.raises(ValueError, match="Levitate"):
            session.send("Levitate", q=[0.0])
