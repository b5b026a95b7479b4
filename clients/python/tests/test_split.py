"""Large batches split across replicas (Client(split_parts=...)): the parts go out at once over
round_robin and are joined back bitwise equal to the answer of one call, for per-state arrays,
per-state matrices, names of the whole call and per-state solver results alike."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

import torqued
from conftest import TorquedProcess
from support import random_states

# 1,001 states over 3 parts: 334, 334 and 333.
STATES = 1001


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_split_batches_equal_one_call_bitwise(
    server: TorquedProcess, launch: type[TorquedProcess]
) -> None:
    replicas = [server]
    for _ in range(2):
        replicas.append(launch())
        replicas[-1].start_serving()
    target = "ipv4:" + ",".join(r.address for r in replicas)
    with torqued.Client(target) as whole, torqued.Client(
        target, split_parts=3, split_min_states=100
    ) as split:
        dog = next(m for m in whole.list_models() if m.name == "quadruped")
        layout = whole.get_model(dog.id)
        q, v, tau = random_states(layout, STATES, seed=31)

        assert same_bits(
            split.forward_dynamics(dog.id, q, v, tau), whole.forward_dynamics(dog.id, q, v, tau)
        )
        for got, want in zip(
            split.mass_matrix(dog.id, q, inverse=True), whole.mass_matrix(dog.id, q, inverse=True)
        ):
            assert same_bits(got, want)
        got_k, want_k = split.kinematics(dog.id, q, v), whole.kinematics(dog.id, q, v)
        assert got_k.frames == want_k.frames
        assert same_bits(got_k.positions, want_k.positions)
        assert same_bits(got_k.rotations, want_k.rotations)
        feet = [{"frame": "FL_foot", "friction": 0.8}, {"frame": "HR_foot", "friction": 0.8}]
        got_c = split.contact_dynamics(dog.id, q, v, tau, feet)
        want_c = whole.contact_dynamics(dog.id, q, v, tau, feet)
        for got, want in zip(got_c, want_c):
            assert same_bits(got, want)
        got_s = split.simulate(dog.id, q[:300], v[:300], 3)
        want_s = whole.simulate(dog.id, q[:300], v[:300], 3)
        for got, want in zip(got_s, want_s):
            assert same_bits(got, want)

        with pytest.raises(torqued.Error) as error:
            split.gravity("no-such-model", q)
        assert error.value.code == grpc.StatusCode.NOT_FOUND
