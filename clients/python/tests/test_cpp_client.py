"""The Python client and the C++ one (through torquectl --format json) return the same bits.

Both send the same float64 states to the same server, so every number must be bitwise equal:
nothing here is compared with a tolerance. torquectl prints round-trip exact numbers (%.17g),
which Python's json reads back to the same doubles once integers are read as floats too ("-0"
must stay -0.0). The binary is $TORQUECTL_BINARY (CTest passes the one it built); without it
these tests are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import torqued
from conftest import TorquedProcess
from support import random_states

FEET = ["FL_foot", "FR_foot", "HL_foot", "HR_foot"]


@pytest.fixture(scope="module")
def torquectl(server: TorquedProcess, tmp_path_factory: pytest.TempPathFactory) -> Callable:
    """Runs `torquectl COMMAND MODEL_ID --input STATES --format json ARGS` on the session's
    server and returns its parsed output."""
    binary = os.environ.get("TORQUECTL_BINARY")
    if not binary:
        pytest.skip("TORQUECTL_BINARY is not set: no torquectl to compare with")
    directory = tmp_path_factory.mktemp("torquectl")

    def run(command: str, model_id: str, states: dict[str, np.ndarray], *args: str) -> Any:
        path = Path(directory) / f"{command}.json"
        path.write_text(json.dumps({k: v.tolist() for k, v in states.items()}))
        done = subprocess.run(
            [binary, command, model_id, "--server", server.address, "--input", str(path)]
            + ["--format", "json", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout, parse_int=float)

    return run


def assert_bitwise(printed: Any, computed: np.ndarray) -> None:
    expected = np.asarray(computed)
    actual = np.array(printed, dtype=expected.dtype)
    assert actual.shape == expected.shape
    assert actual.tobytes() == expected.tobytes()


@pytest.fixture(scope="module")
def quadruped(client: torqued.Client, bundled: dict[str, str]) -> Any:
    return client.get_model(bundled["quadruped"])


def test_unconstrained_rpcs(client: torqued.Client, quadruped: Any, torquectl: Callable) -> None:
    q, v, a = random_states(quadruped, 4, seed=41)
    tau = client.inverse_dynamics(quadruped.id, q, v, a)
    printed = torquectl("inverse-dynamics", quadruped.id, {"q": q, "v": v, "a": a})
    assert_bitwise(printed["tau"], tau)

    printed = torquectl("forward-dynamics", quadruped.id, {"q": q, "v": v, "tau": a})
    assert_bitwise(printed["a"], client.forward_dynamics(quadruped.id, q, v, a))

    mass, inverse = client.mass_matrix(quadruped.id, q, inverse=True)
    printed = torquectl("mass-matrix", quadruped.id, {"q": q}, "--inverse")
    assert_bitwise(printed["mass_matrix"], mass)
    assert_bitwise(printed["inverse"], inverse)

    for of, inputs in (("inverse", {"a": a}), ("forward", {"tau": a})):
        derivatives = client.derivatives(quadruped.id, q, v, **inputs)
        printed = torquectl("derivatives", quadruped.id, {"q": q, "v": v, **inputs}, "--of", of)
        for field in ("d_dq", "d_dv", "d_du"):
            assert_bitwise(printed[field], getattr(derivatives, field))


def test_constrained_dynamics_on_the_four_bar(
    client: torqued.Client, bundled: dict[str, str], torquectl: Callable
) -> None:
    model = client.get_model(bundled["four_bar"])
    q, v, tau = random_states(model, 3, seed=43)
    result = client.constrained_dynamics(
        model.id, q, v, tau, position_gain=100.0, velocity_gain=20.0
    )
    printed = torquectl(
        "constrained-dynamics", model.id, {"q": q, "v": v, "tau": tau}, "--gains", "100,20"
    )
    assert_bitwise(printed["a"], result.a)
    assert_bitwise(printed["multipliers"], result.multipliers)


def test_contact_dynamics_and_impact(
    client: torqued.Client, quadruped: Any, torquectl: Callable
) -> None:
    q, v, tau = random_states(quadruped, 3, seed=47)
    contacts = [{"frame": foot, "normal": [0.0, 0.0, 1.0], "friction": 0.8} for foot in FEET]
    spec = ";".join(f"{foot}::0,0,1:0.8" for foot in FEET)
    result = client.contact_dynamics(quadruped.id, q, v, tau, contacts)
    printed = torquectl(
        "contact-dynamics", quadruped.id, {"q": q, "v": v, "tau": tau}, "--contacts", spec
    )
    assert_bitwise(printed["a"], result.result)
    assert_bitwise(printed["forces"], result.contact)
    assert_bitwise(printed["modes"], result.modes)
    assert_bitwise(printed["status"], result.status)
    assert_bitwise(printed["residual"], result.residual)

    result = client.impact(quadruped.id, q, v, contacts[:2], restitution=0.5)
    options = "--contacts FL_foot::0,0,1:0.8;FR_foot::0,0,1:0.8 --restitution 0.5"
    printed = torquectl("impact", quadruped.id, {"q": q, "v": v}, *options.split())
    assert_bitwise(printed["v"], result.result)
    assert_bitwise(printed["impulses"], result.contact)
    assert_bitwise(printed["iterations"], result.iterations)


def test_simulate(client: torqued.Client, quadruped: Any, torquectl: Callable) -> None:
    q, v, _ = random_states(quadruped, 2, seed=53)
    # The ground just under the lowest foot, so that the feet touch it within the run.
    feet = client.kinematics(quadruped.id, q, frames=FEET).positions
    ground = repr(float(feet[:, :, 2].min()) - 1e-3)
    result = client.simulate(
        quadruped.id,
        q,
        v,
        20,
        candidates=[{"frame": foot} for foot in FEET],
        ground_height=float(ground),
        friction=0.8,
    )
    options = f"--steps 20 --candidates {';'.join(FEET)} --ground-height {ground} --friction 0.8"
    printed = torquectl("simulate", quadruped.id, {"q": q, "v": v}, *options.split())
    assert_bitwise(printed["q"], result.q)
    assert_bitwise(printed["v"], result.v)
    assert_bitwise(printed["max_contacts"], result.max_contacts)
    assert_bitwise(printed["max_residual"], result.max_residual)
    assert result.max_contacts.max() > 0
