"""Every method of the generated services has its Client method: the snake_case of its name, or
the name in EXCEPTIONS. A new RPC fails here until the client has its method.

No server is needed: the methods are read from the descriptors the package generates at install
time (setup.py) and looked up on torqued.Client.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import torqued
from torqued.v1 import control_pb2, dynamics_pb2, model_pb2

# RPC name -> Client method, where it is not the snake_case of the name.
EXCEPTIONS = {"RegisterModel": "register"}

SERVICES = [
    service
    for module in (model_pb2, dynamics_pb2, control_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
]


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_the_services_are_the_model_dynamics_and_control_services() -> None:
    assert [s.full_name for s in SERVICES] == [
        "torqued.v1.ModelService",
        "torqued.v1.DynamicsService",
        "torqued.v1.ControlService",
    ]


@pytest.mark.parametrize("service", SERVICES, ids=lambda s: s.name)
def test_every_method_has_a_client_method(service: Any) -> None:
    missing = [
        f"{m.name} (Client.{EXCEPTIONS.get(m.name, snake_case(m.name))})"
        for m in service.methods
        if not callable(getattr(torqued.Client, EXCEPTIONS.get(m.name, snake_case(m.name)), None))
    ]
    assert not missing, f"{service.full_name}: no Client method for {', '.join(missing)}"


def test_every_exception_names_a_method() -> None:
    methods = {m.name for service in SERVICES for m in service.methods}
    assert set(EXCEPTIONS) <= methods
    for name in EXCEPTIONS:
        assert not callable(getattr(torqued.Client, snake_case(name), None)), name


def test_snake_case() -> None:
    assert snake_case("FloatingBaseInverseDynamics") == "floating_base_inverse_dynamics"
    assert snake_case("Echo") == "echo"
