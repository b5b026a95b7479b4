"""The client behaves like a library: a script that never closes its client exits, a connected
client runs no thread of its own, the host's allocator is left alone unless the caller asks, and
the response fields the client assembles Fx and Fu from follow from the service's descriptors."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

import torqued
from conftest import TorquedProcess
from torqued import _euler_step_jacobians
from torqued.v1 import dynamics_pb2

# Generous: the interpreter's start and teardown on a machine whose CPUs are shared. Before the
# fix such a script never exited at all.
EXIT_TIMEOUT_SECONDS = 60.0

# A script that calls the server and ends without closing its client (or its session), then
# prints the time its last line ran.
UNCLOSED = """
import sys, time
import torqued
client = torqued.Client(sys.argv[1], timeout=30.0)
model = next(m for m in client.list_models() if m.name == "stanford_arm")
client.gravity(model.id, [0.0] * model.nv)
if "session" in sys.argv:
    session = client.session(model_id=model.id)
    session.send("Gravity", q=[0.0] * model.nv)
    next(session)
print(time.time(), flush=True)
"""


def run_to_exit(*args: str) -> float:
    """Runs UNCLOSED with `args`; the seconds from its last line to the process's exit."""
    process = subprocess.Popen(
        [sys.executable, "-c", UNCLOSED, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    try:
        stdout, stderr = process.communicate(timeout=EXIT_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"a script that never closed its client still ran after "
                             f"{EXIT_TIMEOUT_SECONDS} s") from None
    exited = time.time()
    assert process.returncode == 0, stderr
    # Nothing on stderr: no thread died on the closed channel on the way out.
    assert stderr == "", stderr
    return exited - float(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("what", ["client", "session"])
def test_a_script_that_never_closes_its_client_exits(server: TorquedProcess, what: str) -> None:
    seconds = run_to_exit(server.address, what)
    print(f"exited {seconds:.3f} s after its last line")


def test_a_connected_client_runs_no_thread_between_calls(server: TorquedProcess) -> None:
    before = set(threading.enumerate())
    with torqued.Client(server.address) as client:
        client.list_models()
        # A watched channel would have grpcio's connectivity poller running now, receiving the
        # calls' answers in its thread (see _connection._RetryPolling).
        assert set(threading.enumerate()) == before


# Records every mallopt the process makes through ctypes (the client's only way to it), then
# reports them after the client was imported, made, used and closed.
MALLOPT_PROBE = """
import ctypes, sys
calls = []
class Recording(ctypes.CDLL):
    def __getattr__(self, name):
        function = super().__getattr__(name)
        if name != "mallopt":
            return function
        def recorded(*args):
            calls.append(args)
            return function(*args)
        recorded.argtypes = None
        return recorded
ctypes.CDLL = Recording
import torqued
kwargs = {"keep_freed_memory": True} if "opt-in" in sys.argv else {}
with torqued.Client(sys.argv[1], **kwargs) as client:
    client.list_models()
print(calls)
"""


@pytest.mark.parametrize("opt_in", [False, True])
def test_the_allocator_is_left_alone_unless_asked(server: TorquedProcess, opt_in: bool) -> None:
    run = subprocess.run(
        [sys.executable, "-c", MALLOPT_PROBE, server.address, *(["opt-in"] if opt_in else [])],
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_SECONDS,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert run.returncode == 0, run.stderr
    calls = run.stdout.strip().splitlines()[-1]
    # <malloc.h>: M_MMAP_THRESHOLD -3 to 32 MiB, M_TRIM_THRESHOLD -1 to 256 MiB.
    assert calls == ("[(-3, 33554432), (-1, 268435456)]" if opt_in else "[]")


def test_the_assembled_fields_follow_from_the_service_descriptors(
    client: torqued.Client,
) -> None:
    # A method whose request chooses a StepJacobians layout answers, in its velocity-rows layout,
    # every field Fx and Fu are assembled from (repeated doubles); no other method's answer has
    # them. Linearize and Rollout today.
    service = dynamics_pb2.DESCRIPTOR.services_by_name["DynamicsService"]
    choosing = []
    for method in service.methods:
        assembled = _euler_step_jacobians.assembled_from(method)
        fields = method.output_type.fields_by_name
        if _euler_step_jacobians.chooses_step_jacobians(method.input_type):
            choosing.append(method.name)
            assert assembled == _euler_step_jacobians.ASSEMBLED_FROM
            for name in assembled:
                field = fields[name]
                assert field.type == field.TYPE_DOUBLE and field.label == field.LABEL_REPEATED
            assert "integration_blocks" in fields
        else:
            assert assembled == ()
            assert not set(_euler_step_jacobians.ASSEMBLED_FROM) & set(fields), method.name
    assert sorted(choosing) == ["Linearize", "Rollout"]
    # The client's calls borrow exactly those fields.
    for method in service.methods:
        if method.name in client._calls:
            assert client._calls[method.name].borrowed == set(
                _euler_step_jacobians.assembled_from(method)
            ), method.name
