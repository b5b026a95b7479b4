"""What the examples share: registering a robot from a model file, as torqued's model repository
reads them, the comma-separated numbers their options take, the state at rest that their
problems regularize towards, and the solver's iterations printed.

A model file is a URDF (NAME.urdf), MJCF (NAME.xml) or SDF (NAME.sdf) document, registered with
the options of a RegisterModelRequest in NAME.options.txtpb beside it when there is one; or
NAME.txtpb, a whole RegisterModelRequest in protobuf text format (a DH table, a spec). The
examples default to the robots of the repository's deploy/models/.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from google.protobuf import text_format

import torqued
from torqued import activations, residuals
from torqued.v1 import control_pb2, model_pb2

MODELS = Path(__file__).resolve().parents[3] / "deploy" / "models"


def register(client: torqued.Client, path: str | Path) -> model_pb2.Model:
    """Registers the model in `path` (see the module) and returns its layout."""
    path = Path(path)
    request = model_pb2.RegisterModelRequest()
    if path.name.endswith(".txtpb"):
        text_format.Parse(path.read_text(encoding="utf-8"), request)
        return client.register(request=request)
    options = path.with_name(path.stem + ".options.txtpb")
    if options.exists():
        text_format.Parse(options.read_text(encoding="utf-8"), request)
    source = {".urdf": "urdf", ".xml": "mjcf", ".sdf": "sdf"}.get(path.suffix)
    if source is None:
        raise ValueError(f"{path}: expected a .urdf, .xml (MJCF), .sdf or .txtpb model file")
    setattr(request, source, path.read_text(encoding="utf-8"))
    return client.register(request=request)


def numbers(count: int | None = None):
    """An argparse type: comma-separated numbers ("0.3,-0.1,0.4"), `count` of them if given. A
    value that starts with a minus sign is given as --option=-0.07,0.1,0.2 (argparse takes a
    separate "-0.07,..." for an option name)."""

    def parse(text: str) -> np.ndarray:
        try:
            values = np.array([float(x) for x in text.split(",")])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated numbers")
        if count is not None and len(values) != count:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {count} numbers")
        return values

    return parse


def names(text: str) -> list[str]:
    """An argparse type: comma-separated names."""
    return [name for name in text.split(",") if name]


def at_rest(q0: np.ndarray, nv: int) -> tuple[control_pb2.Residual, control_pb2.Activation]:
    """The state residual x (-) (q0, 0) and an activation that weighs its velocity rows only:
    |v|^2 / 2."""
    residual = residuals.state(np.concatenate([q0, np.zeros(nv)]))
    return residual, activations.weighted_quadratic(np.concatenate([np.zeros(nv), np.ones(nv)]))


def print_iterations(solution: torqued.Solution) -> list[float]:
    """Prints the cost after each of the solver's iterations and returns them."""
    costs = [iteration.cost for iteration in solution.iterations]
    for i, cost in enumerate(costs):
        print(f"iteration {i + 1:2d}  cost {cost:12.6g}")
    return costs
