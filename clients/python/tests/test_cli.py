"""python -m torqued: JSON in, JSON out, numbers that read back to the same doubles."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import torqued
from torqued.v1 import dynamics_pb2
from conftest import TorquedProcess
from support import random_states


def run_cli(server: TorquedProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torqued", "--target", server.address, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_results_are_bitwise_the_clients(
    server: TorquedProcess, client: torqued.Client, bundled: dict[str, str], tmp_path: Path
) -> None:
    model = client.get_model(bundled["quadruped"])
    q, v, a = random_states(model, 3, seed=31)
    states = tmp_path / "states.json"
    states.write_text(json.dumps({"q": q.tolist(), "v": v.tolist(), "a": a.tolist()}))
    out = tmp_path / "tau.json"
    result = run_cli(
        server, "inverse-dynamics", model.id, "--input", str(states), "--output", str(out)
    )
    assert result.returncode == 0, result.stderr
    tau = np.array(json.loads(out.read_text())["tau"])
    assert tau.tobytes() == client.inverse_dynamics(model.id, q, v, a).tobytes()

    states.write_text(json.dumps({"q": q[0].tolist(), "v": v[0].tolist(), "tau": a[0].tolist()}))
    result = run_cli(server, "derivatives", model.id, "--input", str(states))
    assert result.returncode == 0, result.stderr
    derivatives = client.derivatives(model.id, q[0], v[0], tau=a[0])
    printed = json.loads(result.stdout)
    for field in ("d_dq", "d_dv", "d_du"):
        assert np.array(printed[field]).tobytes() == getattr(derivatives, field).tobytes()


def test_cli_lists_models_and_reports_errors(server: TorquedProcess) -> None:
    listed = run_cli(server, "list-models")
    assert listed.returncode == 0, listed.stderr
    assert "stanford_arm" in {m["name"] for m in json.loads(listed.stdout)}
    missing = run_cli(server, "get-model", "0" * 32)
    assert missing.returncode == 1
    assert "NOT_FOUND" in missing.stderr


def test_every_batched_method_is_a_command(
    server: TorquedProcess, client: torqued.Client, bundled: dict[str, str], tmp_path: Path
) -> None:
    service = dynamics_pb2.DESCRIPTOR.services_by_name["DynamicsService"]
    usage = run_cli(server, "--help").stdout
    for method in service.methods:
        if method.client_streaming or "model_id" not in method.input_type.fields_by_name:
            continue
        command = re.sub(r"(?<!^)(?=[A-Z])", "-", method.name).lower()
        assert command in usage, f"{method.name}: no command {command}"

    # A command added from the descriptor: a simulation, whose result is several arrays.
    model = client.get_model(bundled["stanford_arm"])
    q, v, _ = random_states(model, 2, seed=5)
    states = tmp_path / "states.json"
    states.write_text(json.dumps({"q": q.tolist(), "v": v.tolist(), "steps": 3}))
    result = run_cli(server, "simulate", model.id, "--input", str(states))
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    simulation = client.simulate(model.id, q, v, 3)
    assert np.array(printed["q"]).tobytes() == simulation.q.tobytes()
    assert np.array(printed["v"]).tobytes() == simulation.v.tobytes()
