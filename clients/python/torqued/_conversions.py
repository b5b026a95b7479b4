"""Between the client's arguments and the proto's fields: the argument types, state batches
(numpy in, numpy out), enum names, messages from proto JSON dicts, PEM text."""

from __future__ import annotations

import math
from typing import Any, Literal, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
from google.protobuf import json_format
from google.protobuf.message import Message

from torqued.results import Array, ContactSolution
from torqued.v1 import dynamics_pb2

InverseDynamicsAlgorithm = Literal["rnea", "lagrange_homogeneous"]
ForwardDynamicsAlgorithm = Literal["aba", "crba", "factorization", "auto"]
MassMatrixAlgorithm = Literal["crba", "lagrange_homogeneous"]
ReferenceFrame = Literal["local", "local_world_aligned", "world"]
ConstrainedDynamicsMode = Literal["forward", "inverse"]
Integrator = Literal["semi_implicit_euler", "explicit_euler", "rk4"]
# "all" DOFs, every DOF but a free-flyer root's ("unactuated_root"), or the joints named.
Actuation = Union[Literal["all", "unactuated_root"], Sequence[str]]
# A proto message, or a dict in its proto JSON form.
Constraint = Union[dynamics_pb2.Constraint, Mapping[str, Any]]
PointContact = Union[dynamics_pb2.PointContact, Mapping[str, Any]]
ContactCandidate = Union[dynamics_pb2.ContactCandidate, Mapping[str, Any]]


class Batch:
    """Packs the per-state arrays of one call and unpacks its results.

    The first array (q) fixes the batch: 1-D is a single state, 2-D is (batch, width). Every
    other per-state array must have the same number of dimensions and rows.
    """

    def __init__(self, q: npt.ArrayLike) -> None:
        array = np.asarray(q, dtype=np.float64)
        if array.ndim not in (1, 2):
            raise ValueError(f"q: expected a 1-D state or a 2-D batch, got shape {array.shape}")
        self.single = array.ndim == 1
        self.size = 1 if self.single else array.shape[0]
        if self.size == 0:
            raise ValueError("q: the batch holds no state")
        self.q = array.ravel()

    def rows(self, name: str, values: npt.ArrayLike) -> Array:
        """A per-state vector: (width,) for a single state, (batch, width) for a batch."""
        array = np.asarray(values, dtype=np.float64)
        expected = (1,) if self.single else (2,)
        if (array.ndim,) != expected or (not self.single and array.shape[0] != self.size):
            wanted = "a 1-D array" if self.single else f"shape ({self.size}, width)"
            raise ValueError(f"{name}: expected {wanted} like q, got shape {array.shape}")
        return array.ravel()

    def wrenches(self, values: Optional[npt.ArrayLike]) -> Array:
        """External forces: per state (bodies - 1, 6) or flat; a batch has them on a first axis."""
        if values is None:
            return np.empty(0)
        array = np.asarray(values, dtype=np.float64)
        if not self.single and (array.ndim < 2 or array.shape[0] != self.size):
            raise ValueError(
                f"external_forces: expected shape ({self.size}, bodies - 1, 6), got {array.shape}"
            )
        return array.ravel()

    def unpack(self, array: Array, *shape: int) -> Array:
        """Reshapes a flat result to (batch, *shape); one -1 in shape is inferred."""
        known = math.prod(d for d in shape if d != -1)
        inferred = len(array) // (self.size * known) if known else 0
        dims = tuple(inferred if d == -1 else d for d in shape)
        return array.reshape(dims if self.single else (self.size, *dims))

    def square(self, array: Array) -> Array:
        """Reshapes a flat result of nv x nv matrices."""
        nv = math.isqrt(len(array) // self.size)
        return self.unpack(array, nv, nv)


def actuation_message(actuation: Actuation) -> dynamics_pb2.Actuation:
    """Linearize's and Rollout's Actuation: "all", "unactuated_root" or joint names."""
    if isinstance(actuation, str):
        kind = enum_value(dynamics_pb2.ActuationKind, "ACTUATION_KIND_", actuation)
        return dynamics_pb2.Actuation(kind=kind)
    return dynamics_pb2.Actuation(kind=dynamics_pb2.ACTUATION_KIND_JOINTS, joints=list(actuation))


def enum_value(enum: Any, prefix: str, name: str) -> Any:
    try:
        return enum.Value(prefix + name.upper())
    except ValueError:
        names = [n[len(prefix) :].lower() for n in enum.keys() if not n.endswith("UNSPECIFIED")]
        raise ValueError(f"unknown {prefix.lower()}{name!r}: expected one of {names}") from None


def message(cls: Any, value: Message | Mapping[str, Any]) -> Any:
    """A proto message from itself or from a dict in its proto JSON form."""
    if isinstance(value, Mapping):
        return json_format.ParseDict(value, cls())
    return value


# A phase of a contact schedule: (first_knot, contacts) or (first_knot, contacts, restitution),
# or a dynamics_pb2.ContactPhase or its proto JSON dict.
Phase = Union[dynamics_pb2.ContactPhase, Mapping[str, Any], Sequence[Any]]
# A friction cone: its coefficient mu alone, or a dynamics_pb2.FrictionCone or its proto JSON dict
# ({"friction": 0.7, "faces": 8, "normal": {"x": 0, "y": 0, "z": 1}}).
Cone = Union[float, dynamics_pb2.FrictionCone, Mapping[str, Any]]


def phase_message(phase: Phase) -> dynamics_pb2.ContactPhase:
    """A ContactPhase from a (first_knot, contacts[, restitution]) tuple, a dict or itself."""
    if isinstance(phase, (dynamics_pb2.ContactPhase, Mapping)):
        return message(dynamics_pb2.ContactPhase, phase)
    if len(phase) not in (2, 3):
        raise ValueError(
            f"phases: a phase is (first_knot, contacts) or (first_knot, contacts, restitution), "
            f"got {len(phase)} items"
        )
    first_knot, contacts = phase[0], phase[1]
    return dynamics_pb2.ContactPhase(
        first_knot=int(first_knot),
        contacts=[message(dynamics_pb2.Constraint, c) for c in contacts],
        restitution=float(phase[2]) if len(phase) == 3 else 0.0,
    )


def cone_message(cone: Optional[Cone]) -> Optional[dynamics_pb2.FrictionCone]:
    """A FrictionCone from mu alone, a dict or itself; None for none."""
    if cone is None:
        return None
    if isinstance(cone, (int, float)):
        return dynamics_pb2.FrictionCone(friction=float(cone))
    return message(dynamics_pb2.FrictionCone, cone)


def solver_options(
    tolerance: Optional[float], max_iterations: Optional[int], slip_velocity: Optional[float]
) -> dynamics_pb2.ContactSolverOptions:
    """Solver options with the given fields set; the others take the server's defaults."""
    options = dynamics_pb2.ContactSolverOptions()
    if tolerance is not None:
        options.tolerance = tolerance
    if max_iterations is not None:
        options.max_iterations = max_iterations
    if slip_velocity is not None:
        options.slip_velocity = slip_velocity
    return options


def contact_solution(
    batch: Batch, response: Any, result: Array, contact: Array
) -> ContactSolution:
    """The per-state arrays of a ContactDynamicsResponse or an ImpactResponse."""
    return ContactSolution(
        result=batch.unpack(result, -1),
        contact=batch.unpack(contact, -1, 3),
        modes=batch.unpack(np.array(response.modes, dtype=np.int32), -1),
        status=batch.unpack(np.array(response.status, dtype=np.int32)),
        iterations=batch.unpack(np.array(response.iterations, dtype=np.uint32)),
        residual=batch.unpack(response.residual),
    )


def pem(value: Optional[bytes | str]) -> Optional[bytes]:
    """PEM text as the bytes grpc.ssl_channel_credentials takes."""
    return value.encode("ascii") if isinstance(value, str) else value
