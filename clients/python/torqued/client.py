"""torqued.Client: the torqued gRPC API with numpy arrays in and out.

Shapes. A call takes states as arrays shaped (batch, nq) for q and (batch, nv) for v, a and tau,
and returns (batch, nv) vectors and (batch, nv, nv) matrices. A single state may be given as 1-D
arrays; the results then drop the batch axis too. Arrays are sent as float64, row-major, exactly
as the proto describes (proto/torqued/v1/dynamics.proto documents every field).

Security. TLS takes the PEM bytes grpc.ssl_channel_credentials takes (root_certificates,
certificate_chain, private_key), or any grpc.ChannelCredentials; `token` is sent with every call
as metadata "authorization: Bearer <token>".

Reliability. Every call has a deadline (the client's `timeout`, or the call's own) covering its
retries: a call answered UNAVAILABLE (or CANCELLED, by a server shutting down) is retried with
exponential backoff, up to `retries` times.
A model registered through this client is remembered: when a call on its id answers NOT_FOUND
(another replica, or a server that lost it), the client registers it again and retries.

Sessions. Client.session() opens a DynamicsService.Session stream for control loops: requests of
any DynamicsService method, sent in turn and answered in order over one call (see Session).
"""

from __future__ import annotations

import collections
import concurrent.futures
import ctypes
import dataclasses
import math
import os
import queue
import random
import threading
import time
from typing import (
    Any,
    Callable,
    Iterable,
    Iterator,
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    TypeVar,
    Union,
    overload,
)

import grpc
import numpy as np
import numpy.typing as npt
from google.protobuf import json_format
from google.protobuf.message import Message

from torqued import _split
from torqued.v1 import dynamics_pb2, model_pb2, model_pb2_grpc

# What `import torqued` exports: the client, its errors and sessions, and the results of its
# methods.
__all__ = [
    "AccelerationsAndForces",
    "Centroidal",
    "Client",
    "ConstrainedDerivatives",
    "ConstrainedDynamics",
    "ContactSolution",
    "Derivatives",
    "Error",
    "Kinematics",
    "Linearization",
    "Rollouts",
    "Session",
    "SessionReply",
    "Simulation",
]

Response = TypeVar("Response", bound=Message)
Array = npt.NDArray[np.float64]

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

# Rounds of re-registration after a NOT_FOUND (see Client._on_model).
_REREGISTER_ROUNDS = 3
# The largest page ListModels returns (model.proto): the fewest calls.
_LIST_MODELS_PAGE_SIZE = 1000


class Error(Exception):
    """A torqued call that failed: the gRPC status code and the server's message.

    Attributes:
        code: the gRPC status, e.g. grpc.StatusCode.NOT_FOUND or INVALID_ARGUMENT.
        message: the status message (the server names the field or model at fault).
        method: the RPC, e.g. "DynamicsService/Gravity".
    """

    def __init__(self, code: grpc.StatusCode, message: str, method: str) -> None:
        super().__init__(f"{method}: {code.name}: {message}")
        self.code = code
        self.message = message
        self.method = method


class AccelerationsAndForces(NamedTuple):
    """Complete joint accelerations `a` and forces `tau`, each (batch, nv)."""

    a: Array
    tau: Array


class Derivatives(NamedTuple):
    """Partial derivatives, each (batch, nv, nv): entry (r, c) is d output_r / d input_c.

    For inverse dynamics: dtau/dq, dtau/dv and dtau/da = M. For forward dynamics: da/dq, da/dv
    and da/dtau = M^-1. q-derivatives are along the velocity (tangent) coordinates.
    """

    d_dq: Array
    d_dv: Array
    d_du: Array


class ConstrainedDerivatives(NamedTuple):
    """Derivatives of constrained forward dynamics: accelerations and constraint forces.

    Attributes:
        da_dq, da_dv, da_dtau: (batch, nv, nv), q-derivatives along the tangent coordinates.
        multipliers: lambda, (batch, rows), laid out as `rows` says.
        dmultipliers_dq, dmultipliers_dv, dmultipliers_dtau: (batch, rows, nv).
        rows: the model's loop closures, then the call's constraints: each one's name, type,
            offset and dimension in `multipliers`.
    """

    da_dq: Array
    da_dv: Array
    da_dtau: Array
    multipliers: Array
    dmultipliers_dq: Array
    dmultipliers_dv: Array
    dmultipliers_dtau: Array
    rows: list[model_pb2.ConstraintRows]


class ConstrainedDynamics(NamedTuple):
    """The result of constrained dynamics.

    Attributes:
        a: joint accelerations, (batch, nv).
        multipliers: the constraint forces lambda, (batch, rows), laid out as `rows` says.
        tau: with mode "inverse", the complete joint forces, (batch, nv); else None.
        rows: the model's loop closures, then the call's constraints: each one's name, type,
            offset and dimension in `multipliers`.
    """

    a: Array
    multipliers: Array
    tau: Optional[Array]
    rows: list[model_pb2.ConstraintRows]


class ContactSolution(NamedTuple):
    """The result of contact dynamics (`result` = accelerations, `contact` = forces) or of an
    impact (`result` = post-impact velocities, `contact` = impulses).

    Attributes:
        result: (batch, nv).
        contact: on the bodies at the contact points, world frame, (batch, C, 3).
        modes: dynamics_pb2.ContactMode values, (batch, C).
        status: dynamics_pb2.ContactSolverStatus values, (batch,).
        iterations: solver pivots or sweeps, (batch,).
        residual: of the complementarity conditions, (batch,).
    """

    result: Array
    contact: Array
    modes: npt.NDArray[np.int32]
    status: npt.NDArray[np.int32]
    iterations: npt.NDArray[np.uint32]
    residual: Array


class Simulation(NamedTuple):
    """Trajectories of a simulation, one per initial state, S steps each.

    Attributes:
        q: configurations after each step, (batch, S, nq).
        v: velocities after each step, (batch, S, nv).
        status: the worst dynamics_pb2.ContactSolverStatus of each trajectory, (batch,).
        max_iterations, max_residual, max_contacts: the largest per step, (batch,).
    """

    q: Array
    v: Array
    status: npt.NDArray[np.int32]
    max_iterations: npt.NDArray[np.uint32]
    max_residual: Array
    max_contacts: npt.NDArray[np.uint32]


@dataclasses.dataclass(frozen=True)
class Kinematics:
    """Placements, velocities and Jacobians of F frames.

    Attributes:
        frames: the F frame names, in the order of the arrays' frame axis.
        positions: frame origins in the world frame, (batch, F, 3).
        rotations: frame orientations, (batch, F, 3, 3), columns = frame axes in world coordinates.
        velocities: twists [v; w], (batch, F, 6), or None when no v was given.
        jacobians: (batch, F, 6, nv), or None unless requested.
    """

    frames: list[str]
    positions: Array
    rotations: Array
    velocities: Optional[Array]
    jacobians: Optional[Array]


@dataclasses.dataclass(frozen=True)
class Centroidal:
    """Centre of mass and centroidal momentum, in world axes.

    Attributes:
        com: centre of mass, (batch, 3).
        com_velocity: its velocity, (batch, 3).
        com_jacobian: J_c with com_velocity = J_c v, (batch, 3, nv).
        momentum: [linear; angular about the centre of mass], (batch, 6).
        momentum_matrix: A_G with momentum = A_G v, (batch, 6, nv).
    """

    com: Array
    com_velocity: Array
    com_jacobian: Array
    momentum: Array
    momentum_matrix: Array


class Linearization(NamedTuple):
    """A horizon's linearization, one entry per knot (no knot axis for 1-D inputs).

    The state x = (q, v) has 2 nv tangent coordinates: dq (q + dq on the manifold), then dv.

    Attributes:
        q_next: the configuration after the step, on the manifold, (K, nq).
        v_next: the velocity after the step, (K, nv).
        fx: dx+/dx, (K, 2 nv, 2 nv).
        fu: dx+/du, (K, 2 nv, nu).
        da_dq, da_dv, da_dtau: with continuous_derivatives, the forward dynamics' derivatives
            at each knot, (K, nv, nv); else None.
        multipliers: with continuous_derivatives and constraints (or loop closures), lambda at
            each knot, (K, rows), laid out as `rows` says; else None.
        dmultipliers_dq, dmultipliers_dv, dmultipliers_dtau: likewise its derivatives,
            (K, rows, nv); else None.
        rows: the model's loop closures, then the call's constraints.
    """

    q_next: Array
    v_next: Array
    fx: Array
    fu: Array
    da_dq: Optional[Array]
    da_dv: Optional[Array]
    da_dtau: Optional[Array]
    multipliers: Optional[Array]
    dmultipliers_dq: Optional[Array]
    dmultipliers_dv: Optional[Array]
    dmultipliers_dtau: Optional[Array]
    rows: list[model_pb2.ConstraintRows]


class Rollouts(NamedTuple):
    """Shooting forward passes: R rollouts of K steps (no rollout axis for a 1-D x0).

    A rollout that diverged (its dynamics singular, or its state no longer finite) took fewer
    steps than K: its values past them are zeros, and its error says why.

    Attributes:
        steps: the steps each rollout took, (R,) (a scalar for a 1-D x0).
        errors: why each stopped early, "" for one that completed.
        q: the states' configurations x_0 ... x_K, on the manifold, (R, K + 1, nq).
        v: their velocities, (R, K + 1, nv).
        u: the controls applied, feedback included, (R, K, nu).
        fx, fu: with jacobians, dx_{k+1}/dx_k (R, K, 2 nv, 2 nv) and dx_{k+1}/du_k
            (R, K, 2 nv, nu), as linearize gives them at these states; else None.
        multipliers: with constraints (or loop closures), lambda at each step's state,
            (R, K, rows), laid out as `rows` says; else None.
        frames: the frames reported.
        frame_positions, frame_rotations: their origins (R, K + 1, F, 3) and rotations
            (R, K + 1, F, 3, 3) at every state; None without frames.
        frame_jacobians: with frame_jacobians, (R, K + 1, F, 6, nv); else None.
        rows: the model's loop closures, then the call's constraints.
    """

    steps: Any
    errors: list[str]
    q: Array
    v: Array
    u: Array
    fx: Optional[Array]
    fu: Optional[Array]
    multipliers: Optional[Array]
    frames: list[str]
    frame_positions: Optional[Array]
    frame_rotations: Optional[Array]
    frame_jacobians: Optional[Array]
    rows: list[model_pb2.ConstraintRows]


class _Batch:
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


def _euler_step_jacobians(
    dv_dx: Array, dv_du: Array, response: Any, dt: float, *, explicit: bool
) -> tuple[Array, Array]:
    """Fx (K, 2nv, 2nv) and Fu (K, 2nv, nu) of Euler steps from their v+ rows, dv_dx (K, nv, 2nv)
    and dv_du (K, nv, nu), and the response's blocks of J_q and J_w (StepJacobians in
    dynamics.proto): semi-implicit, dq+/dx = J_q [I 0] + dt J_w dv+/dx and dq+/du = dt J_w dv+/du;
    explicit, dq+/dx = [J_q  dt J_w] and dq+/du = 0. J_q and J_w are 1 on 1-DOF joints."""
    knots, nv, nx = dv_dx.shape
    fx = np.empty((knots, nx, nx))
    fu = np.empty((knots, nx, dv_du.shape[2]))
    fx[:, nv:] = dv_dx
    fu[:, nv:] = dv_du
    dofs = np.arange(nv)
    if explicit:
        fx[:, :nv] = 0.0
        fu[:, :nv] = 0.0
        fx[:, dofs, dofs] = 1.0
        fx[:, dofs, nv + dofs] = dt
    else:
        np.multiply(dv_dx, dt, out=fx[:, :nv])
        np.multiply(dv_du, dt, out=fu[:, :nv])
        fx[:, dofs, dofs] += 1.0
    values = sum(block.dofs * block.dofs for block in response.integration_blocks)
    integrate_dq = response.integrate_dq.reshape(knots, values)
    integrate_dw = response.integrate_dw.reshape(knots, values)
    at = 0
    for block in response.integration_blocks:
        first, size = block.first_dof, block.dofs
        jq = integrate_dq[:, at : at + size * size].reshape(knots, size, size)
        jw = dt * integrate_dw[:, at : at + size * size].reshape(knots, size, size)
        at += size * size
        rows = slice(first, first + size)
        if explicit:
            fx[:, rows, rows] = jq
            fx[:, rows, nv + first : nv + first + size] = jw
        else:
            fx[:, rows] = jw @ dv_dx[:, rows]
            fx[:, rows, rows] += jq
            fu[:, rows] = jw @ dv_du[:, rows]
    return fx, fu


def _actuation(actuation: Actuation) -> dynamics_pb2.Actuation:
    """Linearize's and Rollout's Actuation: "all", "unactuated_root" or joint names."""
    if isinstance(actuation, str):
        kind = _enum(dynamics_pb2.ActuationKind, "ACTUATION_KIND_", actuation)
        return dynamics_pb2.Actuation(kind=kind)
    return dynamics_pb2.Actuation(kind=dynamics_pb2.ACTUATION_KIND_JOINTS, joints=list(actuation))


def _enum(enum: Any, prefix: str, name: str) -> Any:
    try:
        return enum.Value(prefix + name.upper())
    except ValueError:
        names = [n[len(prefix) :].lower() for n in enum.keys() if not n.endswith("UNSPECIFIED")]
        raise ValueError(f"unknown {prefix.lower()}{name!r}: expected one of {names}") from None


def _message(cls: Any, value: Message | Mapping[str, Any]) -> Any:
    """A proto message from itself or from a dict in its proto JSON form."""
    if isinstance(value, Mapping):
        return json_format.ParseDict(value, cls())
    return value


def _solver_options(
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


def _contact_solution(
    batch: _Batch, response: Any, result: Array, contact: Array
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


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(data: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    """The top-level fields of a serialized message: (number, wire type, where the field starts,
    where its value starts, where it ends)."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        value = pos
        if wire_type == 0:
            _, pos = _read_varint(data, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, value = _read_varint(data, pos)
            pos = value + length
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire_type}")
        yield number, wire_type, start, value, pos


class _Reply:
    """A response: its repeated double fields as float64 arrays, its other fields as parsed."""

    def __init__(self, message: Message, arrays: dict[str, Array]) -> None:
        self._message = message
        self._arrays = arrays

    def __getattr__(self, name: str) -> Any:
        if name in self._arrays:
            return self._arrays[name]
        return getattr(self._message, name)


# The response fields each unary call's client method consumes itself (_PackedCall).
_BORROWED = {"Linearize": ("dv_next_dx", "dv_next_du", "integrate_dq", "integrate_dw")}


class _PackedCall:
    """A DynamicsService RPC whose repeated double fields go between numpy and the wire directly.

    protobuf's Python containers cost about a microsecond per number each way (seconds for a
    batch of 10^4 mass matrices); packed doubles are plain little-endian bytes, so they are
    appended to the serialized scalar fields on the way out (fields may come in any order) and
    cut out of the response with np.frombuffer on the way in.

    `borrowed` names response fields that the client reads once itself and never hands out
    (Linearize's velocity rows, from which it assembles Fx and Fu): the unary call leaves them as
    read-only views of the received bytes instead of copying them out (a 3.4 MB answer's copy
    took 0.3 ms).
    """

    def __init__(self, channel: grpc.Channel, method: Any, borrowed: Iterable[str] = ()) -> None:
        self.request_class = getattr(dynamics_pb2, method.input_type.name)
        self.response_class = getattr(dynamics_pb2, method.output_type.name)
        self.request_doubles = {f.name: f.number for f in _repeated_doubles(method.input_type)}
        self.response_doubles = {f.number: f.name for f in _repeated_doubles(method.output_type)}
        self.borrowed = frozenset(borrowed)
        self.rpc = channel.unary_unary(
            f"/{method.containing_service.full_name}/{method.name}",
            request_serializer=self.encode,
            response_deserializer=lambda data: self.decode(data, self.borrowed),
        )

    def request(self, **fields: Any) -> tuple[Message, dict[str, Array]]:
        arrays = {k: fields.pop(k) for k in list(fields) if k in self.request_doubles}
        return self.request_class(**fields), arrays

    def encode(self, request: tuple[Message, dict[str, Array]]) -> bytes:
        message, arrays = request
        parts = [message.SerializeToString()]
        for name, array in arrays.items():
            if array.size:
                data = np.ascontiguousarray(array, dtype="<f8").tobytes()
                parts += [_varint(self.request_doubles[name] << 3 | 2), _varint(len(data)), data]
        return b"".join(parts)

    def decode(self, data: bytes, borrowed: frozenset[str] = frozenset()) -> _Reply:
        """The reply in `data`; the fields named in `borrowed` may be views of it."""
        chunks: dict[str, list[Array]] = {name: [] for name in self.response_doubles.values()}
        rest = bytearray()
        for number, wire_type, start, value, end in _fields(data):
            name = self.response_doubles.get(number)
            if name is not None and wire_type in (1, 2):
                count = (end - value) // 8
                chunks[name].append(np.frombuffer(data, "<f8", count=count, offset=value))
            else:
                rest += data[start:end]
        arrays = {
            name: (
                parts[0] if len(parts) == 1 and name in borrowed else np.concatenate(parts)
            ).astype(np.float64, copy=False)
            if parts
            else np.empty(0)
            for name, parts in chunks.items()
        }
        return _Reply(self.response_class.FromString(bytes(rest)), arrays)


_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}


class SessionReply(NamedTuple):
    """The answer to one message of a Session.

    Attributes:
        sequence: the number Session.send returned for the message.
        method: the RPC whose request the message carried, e.g. "InverseDynamics".
        response: the method's response (None when the message failed), with its repeated
            double fields as float64 arrays: one state per row, (batch, n), when the message's q
            was a batch, flat for a single state or no q. Per-state matrices stay flattened
            row-major (reshape to (batch, nv, nv)).
        error: why the message failed (the stream goes on), else None.
    """

    sequence: int
    method: str
    response: Optional[Any]
    error: Optional[Error]


class _SessionCodec:
    """SessionRequest and SessionResponse bytes around the unary calls' packed requests and
    replies: a request's bytes are the field of the SessionRequest oneof that carries it."""

    def __init__(self, calls: dict[str, _PackedCall]) -> None:
        def numbers(message: Any) -> dict[str, int]:
            return {f.message_type.full_name: f.number for f in message.fields if f.message_type}

        requests = numbers(dynamics_pb2.SessionRequest.DESCRIPTOR)
        responses = numbers(dynamics_pb2.SessionResponse.DESCRIPTOR)
        self.calls = {
            name: (call, requests[call.request_class.DESCRIPTOR.full_name])
            for name, call in calls.items()
            if call.request_class.DESCRIPTOR.full_name in requests
        }
        self.replies = {
            responses[call.response_class.DESCRIPTOR.full_name]: call
            for call, _ in self.calls.values()
        }

    def encode(
        self, name: str, request: tuple[Message, dict[str, Array]], sequence: int, model_id: str
    ) -> bytes:
        call, number = self.calls[name]
        inner = call.encode(request)
        head = dynamics_pb2.SessionRequest(model_id=model_id, sequence=sequence)
        return head.SerializeToString() + _varint(number << 3 | 2) + _varint(len(inner)) + inner

    def decode(self, data: bytes) -> tuple[dynamics_pb2.SessionResponse, Optional[_Reply]]:
        reply = None
        rest = bytearray()
        for number, wire_type, start, value, end in _fields(data):
            call = self.replies.get(number)
            if call is not None and wire_type == 2:
                reply = call.decode(data[value:end])
            else:
                rest += data[start:end]
        return dynamics_pb2.SessionResponse.FromString(bytes(rest)), reply


class Session:
    """A DynamicsService.Session stream (Client.session): requests sent in turn over one call,
    each answered in the order sent; a request that fails is answered with its error and the
    stream goes on.

    send() takes a DynamicsService method's name and its request's fields as the unary methods
    build them: numpy arrays (any shape, sent row-major) for the repeated double fields, with
    batch_size taken from q ((batch, nq), or one state (nq,)); proto values, dicts in proto JSON
    form or enum names for the others. Iterating the session yields a SessionReply per message,
    in order, until the stream ends: after close(), once every message is answered.

    The deadline (the client's timeout, or the session's own) bounds the whole stream; the
    client's token and TLS go with it. A stream is not retried and does not re-register models.
    One thread may send while another iterates.

    Example:
        with client.session(model_id=arm.id) as session:
            session.send("Gravity", q=q)
            session.send("InverseDynamics", q=q, v=v, a=a)
            gravity, inverse = next(session), next(session)
            tau = inverse.response.tau  # (batch, nv)
    """

    # How often the stream's request thread looks whether the call has ended.
    _POLL_SECONDS = 0.5

    def __init__(
        self,
        rpc: grpc.StreamStreamMultiCallable,
        codec: _SessionCodec,
        model_id: str,
        timeout: Optional[float],
        metadata: Any,
    ) -> None:
        self._codec = codec
        self._model_id = model_id
        self._messages: queue.Queue[Optional[bytes]] = queue.Queue()
        # (sequence, method, rows of the batch or None) of each message not yet answered.
        self._pending: collections.deque[tuple[int, str, Optional[int]]] = collections.deque()
        self._sequence = 0
        self._closed = False
        self._call: Any = None
        self._call = rpc(self._outgoing(), timeout=timeout, metadata=metadata)

    def _outgoing(self) -> Iterator[bytes]:
        """The messages, for grpcio's request thread; ends at close(), or with the call."""
        while True:
            try:
                message = self._messages.get(timeout=self._POLL_SECONDS)
            except queue.Empty:
                if self._call is not None and self._call.done():
                    return
                continue
            if message is None:
                return
            yield message

    def send(self, method: str, *, model_id: Optional[str] = None, **fields: Any) -> int:
        """Sends a request of `method` (e.g. "InverseDynamics") built from `fields`.

        Args:
            method: a unary method of DynamicsService.
            model_id: switch the stream to this model from this message on; the first message
                takes the session's model when not given.
            fields: the request's fields (see the class).

        Returns:
            The message's sequence number, which its reply carries.
        """
        if self._closed:
            raise ValueError("send: the session is closed")
        if method not in self._codec.calls:
            raise ValueError(f"send: {method!r} is not a method a Session carries")
        call, _ = self._codec.calls[method]
        rows = None
        batched = "batch_size" in call.request_class.DESCRIPTOR.fields_by_name
        if batched and fields.get("q") is not None:
            batch = _Batch(fields["q"])
            fields.setdefault("batch_size", batch.size)
            rows = None if batch.single else batch.size
        for name in call.request_doubles:
            if name in fields:
                fields[name] = np.asarray(fields[name], dtype=np.float64).ravel()
        request = call.request(**fields)
        self._sequence += 1
        if model_id is None and self._sequence == 1:
            model_id = self._model_id
        data = self._codec.encode(method, request, self._sequence, model_id or "")
        self._pending.append((self._sequence, method, rows))
        self._messages.put(data)
        return self._sequence

    def close(self) -> None:
        """No more messages: the stream ends once those sent are answered."""
        if not self._closed:
            self._closed = True
            self._messages.put(None)

    def cancel(self) -> None:
        """Ends the stream now; replies not yet read are lost."""
        self.close()
        self._call.cancel()

    def __iter__(self) -> Session:
        return self

    def __next__(self) -> SessionReply:
        """The reply to the earliest message not yet answered.

        Raises:
            StopIteration: the stream ended, every message answered.
            Error: the stream failed (DEADLINE_EXCEEDED, UNAVAILABLE, UNAUTHENTICATED, ...).
        """
        try:
            message, reply = next(self._call)
        except grpc.RpcError as error:
            raise Error(error.code(), error.details() or "", "DynamicsService/Session") from None
        _, method, rows = self._pending.popleft()
        if reply is not None and rows is not None:
            reply = _Reply(
                reply._message, {name: a.reshape(rows, -1) for name, a in reply._arrays.items()}
            )
        error = None
        if message.status.code != 0:
            code = _STATUS_CODES.get(message.status.code, grpc.StatusCode.UNKNOWN)
            error = Error(code, message.status.message, f"DynamicsService/{method}")
        return SessionReply(message.sequence, method, reply, error)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: Any, *exc_info: object) -> None:
        """On an exception, cancels the stream; otherwise closes it, discards the replies not
        read and raises Error if the stream failed."""
        if exc_type is not None:
            self.cancel()
            return
        self.close()
        for _ in self:
            pass


_malloc_kept = False
_malloc_lock = threading.Lock()


def _keep_freed_memory() -> None:
    """glibc keeps freed memory for reuse rather than handing it back at every free: the
    thresholds torqued's server sets (mallopt M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD
    256 MiB). Once per process; nothing where the C library is not glibc."""
    global _malloc_kept
    with _malloc_lock:
        if _malloc_kept:
            return
        _malloc_kept = True
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            return
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
        mallopt(m_mmap_threshold, 32 << 20)
        mallopt(m_trim_threshold, 256 << 20)


def _pem(value: Optional[bytes | str]) -> Optional[bytes]:
    """PEM text as the bytes grpc.ssl_channel_credentials takes."""
    return value.encode("ascii") if isinstance(value, str) else value


def _repeated_doubles(message: Any) -> list[Any]:
    return [f for f in message.fields if f.type == f.TYPE_DOUBLE and f.label == f.LABEL_REPEATED]


class Client:
    """A connection to torqued (one server, or several behind a DNS name or a proxy).

    Example:
        with torqued.Client("localhost:50051") as client:
            arm = next(m for m in client.list_models() if m.name == "stanford_arm")
            tau = client.gravity(arm.id, [0.3, -0.6, 0.5, 0.8, -0.4, 0.2])
    """

    def __init__(
        self,
        target: str,
        *,
        timeout: Optional[float] = 30.0,
        retries: int = 4,
        initial_backoff: float = 0.1,
        max_backoff: float = 5.0,
        round_robin: bool = True,
        credentials: Optional[grpc.ChannelCredentials] = None,
        root_certificates: Optional[bytes | str] = None,
        certificate_chain: Optional[bytes | str] = None,
        private_key: Optional[bytes | str] = None,
        token: Optional[str] = None,
        channel_options: Sequence[tuple[str, Any]] = (),
        split_parts: int = 1,
        split_min_states: int = 1000,
        keep_freed_memory: bool = True,
    ) -> None:
        """Opens a channel; connecting happens on the first call.

        Args:
            target: a gRPC target, e.g. "localhost:50051" or "dns:///torqued.example:50051".
            timeout: default deadline of a call, retries included, in seconds; None: no deadline.
            retries: how many times a call answered UNAVAILABLE or CANCELLED is sent again.
            initial_backoff: wait before the first retry, seconds; doubled after each retry (with
                +-20% jitter), up to max_backoff. The channel reconnects on the same schedule.
            max_backoff: longest wait between two attempts, seconds.
            round_robin: spread calls over every address the target resolves to (gRPC's
                round_robin policy) rather than sticking to the first that connects.
            credentials: TLS credentials (grpc.ssl_channel_credentials(...)); None: plaintext,
                unless root_certificates or certificate_chain is given.
            root_certificates: TLS, the PEM certificates of the CAs that sign the server's
                certificate, e.g. open("ca.pem", "rb").read(); None with a certificate_chain:
                the system's roots.
            certificate_chain: mutual TLS: this client's PEM certificate chain.
            private_key: the PEM private key of certificate_chain.
            token: a bearer token for servers started with --token-file or
                --admin-token-file; None: no token.
            channel_options: extra gRPC channel arguments, applied last (for example
                ("grpc.ssl_target_name_override", "torqued.internal") to check the server's
                certificate against another name than the target's host).

            split_parts: large batches over several replicas: a dynamics batch is cut into at
                most this many parts of contiguous states, sent at once (round_robin hands each
                to the next replica) and joined back in order, bitwise what one call returns.
                1: never split.
            split_min_states: the fewest states in a part.
            keep_freed_memory: have glibc keep freed memory for the next answer, as torqued
                does (mallopt: no mmap below 32 MiB, no trim below 256 MiB; process-wide, once):
                with its defaults each large answer's buffers are unmapped when freed and their
                pages faulted in again by the next call, which costs more than the call on
                machines with slow page faults (a 100-knot talos_reduced Linearize, 3.4 MB:
                45 ms instead of 8 ms on a virtual machine where a fault takes 12 us). False:
                malloc is left as it is.

        Raises:
            ValueError: credentials given together with PEM bytes, or a certificate chain
                without its private key (or a key without its chain).
        """
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("certificate_chain and private_key go together: give both or neither")
        if root_certificates is not None or certificate_chain is not None:
            if credentials is not None:
                raise ValueError("give credentials or PEM certificates, not both")
            credentials = grpc.ssl_channel_credentials(
                _pem(root_certificates), _pem(private_key), _pem(certificate_chain)
            )
        if keep_freed_memory:
            _keep_freed_memory()
        self._metadata = None if not token else (("authorization", f"Bearer {token}"),)
        options: list[tuple[str, Any]] = [
            ("grpc.max_send_message_length", -1),
            ("grpc.max_receive_message_length", -1),
            ("grpc.initial_reconnect_backoff_ms", max(1, int(initial_backoff * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(max_backoff * 1000))),
        ]
        if round_robin:
            options.append(("grpc.lb_policy_name", "round_robin"))
        options.extend(channel_options)
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=options)
        # grpcio runs the channel's timers (reconnect backoff among them) only while a thread
        # polls it; between calls nothing does, and a failed connection is retried only every
        # ~5 s. Watching the connectivity state keeps a poller, so reconnects follow the backoff.
        self._watch = lambda state: None
        self._channel.subscribe(self._watch, try_to_connect=False)
        self._timeout = timeout
        self._retries = retries
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._models = model_pb2_grpc.ModelServiceStub(self._channel)
        service = dynamics_pb2.DESCRIPTOR.services_by_name["DynamicsService"]
        self._calls = {
            m.name: _PackedCall(self._channel, m, _BORROWED.get(m.name, ()))
            for m in service.methods
            if not (m.client_streaming or m.server_streaming)
        }
        self._session_codec = _SessionCodec(self._calls)
        self._session = self._channel.stream_stream(
            f"/{service.full_name}/Session", response_deserializer=self._session_codec.decode
        )
        self._sources: dict[str, model_pb2.RegisterModelRequest] = {}
        self._sources_lock = threading.Lock()
        self._split_parts = split_parts
        self._split_min_states = split_min_states

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        self._channel.unsubscribe(self._watch)
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------
    # Calls: deadlines, retries, re-registration.

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        budget = self._timeout if timeout is None else timeout
        return None if budget is None else time.monotonic() + budget

    def _invoke(
        self,
        method: str,
        rpc: Callable[..., Response],
        request: Message,
        deadline: Optional[float],
    ) -> Response:
        backoff = self._initial_backoff
        attempt = 0
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return rpc(request, timeout=remaining, metadata=self._metadata)
            except grpc.RpcError as error:
                code, details = error.code(), error.details() or ""
            wait = min(backoff, self._max_backoff) * random.uniform(0.8, 1.2)
            # CANCELLED comes from a server shutting down (it cancels the calls it has received
            # but not started); this client cancels nothing, and every RPC is idempotent.
            retryable = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
            retry = code in retryable and attempt < self._retries
            if not retry or (deadline is not None and time.monotonic() + wait >= deadline):
                raise Error(code, details, method)
            time.sleep(wait)
            backoff *= 2
            attempt += 1

    def _on_model(
        self,
        method: str,
        rpc: Callable[..., Response],
        request: Any,
        model_id: str,
        timeout: Optional[float],
    ) -> Response:
        """Invokes a call on model_id, re-registering a remembered model on NOT_FOUND.

        Under round_robin a registration and the retry after it reach different replicas, so
        round r registers r times in a row before retrying: with up to _REREGISTER_ROUNDS
        replicas, one round's registrations reach every replica the retry can reach.
        """
        deadline = self._deadline(timeout)
        try:
            return self._invoke(method, rpc, request, deadline)
        except Error as error:
            last = error
        with self._sources_lock:
            source = self._sources.get(model_id)
        if last.code != grpc.StatusCode.NOT_FOUND or source is None:
            raise last
        for rounds in range(1, _REREGISTER_ROUNDS + 1):
            for _ in range(rounds):
                model = self._register_request(source, deadline)
                if model.id != model_id:
                    raise Error(
                        grpc.StatusCode.NOT_FOUND,
                        f"{last.message}; registering the model again gave id {model.id}",
                        method,
                    )
            try:
                return self._invoke(method, rpc, request, deadline)
            except Error as error:
                if error.code != grpc.StatusCode.NOT_FOUND:
                    raise
                last = error
        raise last

    def _compute(self, name: str, model_id: str, timeout: Optional[float], **fields: Any) -> Any:
        """Invokes DynamicsService/<name> with `fields` (float64 arrays for the double fields)."""
        call = self._calls[name]
        request = call.request(model_id=model_id, **fields)
        method = f"DynamicsService/{name}"
        parts = _split.split_request(request, self._split_parts, self._split_min_states)
        if len(parts) == 1:
            return self._on_model(method, call.rpc, request, model_id, timeout)
        with concurrent.futures.ThreadPoolExecutor(len(parts)) as pool:
            replies = list(
                pool.map(
                    lambda part: self._on_model(method, call.rpc, part, model_id, timeout), parts
                )
            )
        return _Reply(*_split.join_replies([(r._message, r._arrays) for r in replies]))

    # ------------------------------------------------------------------------------------------
    # ModelService.

    def _register_request(
        self, request: model_pb2.RegisterModelRequest, deadline: Optional[float]
    ) -> model_pb2.Model:
        response = self._invoke(
            "ModelService/RegisterModel", self._models.RegisterModel, request, deadline
        )
        with self._sources_lock:
            self._sources[response.model.id] = request
        return response.model

    def register(
        self,
        *,
        urdf: Optional[str | os.PathLike[str]] = None,
        dh: Optional[model_pb2.DhTable | Mapping[str, Any]] = None,
        spec: Optional[model_pb2.ModelSpec | Mapping[str, Any]] = None,
        request: Optional[model_pb2.RegisterModelRequest] = None,
        mjcf: Optional[str | os.PathLike[str]] = None,
        sdf: Optional[str | os.PathLike[str]] = None,
        name: str = "",
        floating_base: bool = False,
        gravity: Optional[Sequence[float]] = None,
        strict: bool = False,
        timeout: Optional[float] = None,
    ) -> model_pb2.Model:
        """Registers a model (idempotent) and returns its id and layout.

        Give exactly one source: `urdf`, `mjcf` or `sdf` (XML text, or a path-like to a URDF,
        MJCF or SDF file), `dh` (a DhTable, or a dict in its proto JSON form), `spec` (a
        ModelSpec or dict), or a complete `request` (then name, floating_base and gravity are
        ignored). The client remembers the request, and registers it again if a later call finds
        the id unknown. An MJCF file's <include> elements are not followed (the server refuses
        them): inline them first.

        Args:
            name: model name; empty: the description's own (URDF robot, MJCF model, SDF model),
                or "dh_model" / "spec_model".
            floating_base: attach the root link through a free-flyer "root_joint" (an MJCF
                file's free joint on its root body becomes it; without floating_base that joint
                is removed and the root body welded to the world).
            gravity: gravity acceleration in the world frame, m/s^2; None: (0, 0, -9.81).
            strict: refuse the model (INVALID_ARGUMENT) if building it gives any warning (with
                `request` too: it sets the request's `strict`).
            timeout: deadline in seconds; None: the client's.

        Returns:
            The registered model (id, nq, nv, joints, bodies, frames, warnings).

        Raises:
            Error: INVALID_ARGUMENT naming the joint or link at fault, RESOURCE_EXHAUSTED, ...
        """
        given = [source is not None for source in (urdf, mjcf, sdf, dh, spec, request)]
        if sum(given) != 1:
            raise ValueError("register: give exactly one of urdf, mjcf, sdf, dh, spec, request")
        if request is None:
            request = model_pb2.RegisterModelRequest(name=name)
            request.base = (
                model_pb2.BASE_TYPE_FLOATING if floating_base else model_pb2.BASE_TYPE_FIXED
            )
            if gravity is not None:
                x, y, z = (float(g) for g in gravity)
                request.gravity.CopyFrom(model_pb2.Vector3(x=x, y=y, z=z))
            for field, document in (("urdf", urdf), ("mjcf", mjcf), ("sdf", sdf)):
                if isinstance(document, os.PathLike):
                    setattr(request, field, open(document, encoding="utf-8").read())
                elif document is not None:
                    setattr(request, field, document)
            if isinstance(dh, Mapping):
                json_format.ParseDict(dh, request.dh)
            elif dh is not None:
                request.dh.CopyFrom(dh)
            elif isinstance(spec, Mapping):
                json_format.ParseDict(spec, request.spec)
            elif spec is not None:
                request.spec.CopyFrom(spec)
        else:
            copied = model_pb2.RegisterModelRequest()
            copied.CopyFrom(request)
            request = copied
        if strict:
            request.strict = True
        return self._register_request(request, self._deadline(timeout))

    def get_model(self, model_id: str, *, timeout: Optional[float] = None) -> model_pb2.Model:
        """The layout of a model: nq, nv, joints (with q/v offsets), bodies and frames.

        Raises:
            Error: NOT_FOUND for an unknown id (after re-registering one this client registered).
        """
        request = model_pb2.GetModelRequest(model_id=model_id)
        return self._on_model(
            "ModelService/GetModel", self._models.GetModel, request, model_id, timeout
        )

    def list_models(self, *, timeout: Optional[float] = None) -> list[model_pb2.ModelSummary]:
        """Every model the server holds (id, name, base, nq, nv, origin), by name then id.

        ListModels answers a page at a time; every page is fetched, all within `timeout`.
        """
        deadline = self._deadline(timeout)
        request = model_pb2.ListModelsRequest(page_size=_LIST_MODELS_PAGE_SIZE)
        models: list[model_pb2.ModelSummary] = []
        while True:
            response = self._invoke(
                "ModelService/ListModels", self._models.ListModels, request, deadline
            )
            models.extend(response.models)
            if not response.next_page_token:
                return models
            request.page_token = response.next_page_token

    def delete_model(self, model_id: str, *, timeout: Optional[float] = None) -> None:
        """Deletes a registered model; this client forgets it (no re-registration).

        Raises:
            Error: NOT_FOUND for an unknown id, FAILED_PRECONDITION for a repository model.
        """
        with self._sources_lock:
            self._sources.pop(model_id, None)
        self._invoke(
            "ModelService/DeleteModel",
            self._models.DeleteModel,
            model_pb2.DeleteModelRequest(model_id=model_id),
            self._deadline(timeout),
        )

    def health(self, *, timeout: Optional[float] = None) -> str:
        """The server's grpc.health.v1 status: "SERVING", "NOT_SERVING", ... (no retries).

        Raises:
            Error: UNAVAILABLE when nothing answers, DEADLINE_EXCEEDED, ...
        """
        check = self._channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda request: request,
            response_deserializer=lambda response: response,
        )
        try:
            budget = self._timeout if timeout is None else timeout
            # HealthCheckRequest{service: ""} encodes to no bytes; the response is one enum
            # field (number 1, varint): b"\x08" + status, status < 128.
            response = check(b"", timeout=budget)
        except grpc.RpcError as error:
            raise Error(error.code(), error.details() or "", "Health/Check") from None
        status = response[1] if response[:1] == b"\x08" else 0
        return ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"][min(status, 3)]

    # ------------------------------------------------------------------------------------------
    # DynamicsService.

    def inverse_dynamics(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        a: npt.ArrayLike,
        *,
        external_forces: Optional[npt.ArrayLike] = None,
        algorithm: InverseDynamicsAlgorithm = "rnea",
        timeout: Optional[float] = None,
    ) -> Array:
        """Joint forces tau = M(q) a + C(q, v) v + g(q) - sum J^T f_ext, shaped like v.

        Args:
            q: configurations, (batch, nq) or (nq,).
            v, a: velocities and accelerations, (batch, nv) or (nv,).
            external_forces: wrenches [force; torque] on the moving bodies, in each body's
                frame, (batch, bodies - 1, 6) or (bodies - 1, 6); None: none.
            algorithm: "rnea" or "lagrange_homogeneous" (no external forces).
            timeout: deadline in seconds; None: the client's.
        """
        batch = _Batch(q)
        response = self._compute(
            "InverseDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            a=batch.rows("a", a),
            external_forces=batch.wrenches(external_forces),
            algorithm=_enum(
                dynamics_pb2.InverseDynamicsAlgorithm, "INVERSE_DYNAMICS_ALGORITHM_", algorithm
            ),
        )
        return batch.unpack(response.tau, -1)

    def forward_dynamics(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        tau: npt.ArrayLike,
        *,
        external_forces: Optional[npt.ArrayLike] = None,
        algorithm: ForwardDynamicsAlgorithm = "aba",
        timeout: Optional[float] = None,
    ) -> Array:
        """Joint accelerations a = M(q)^-1 (tau - C(q, v) v - g(q) + sum J^T f_ext), like v.

        Args:
            q, v, external_forces, timeout: as in inverse_dynamics.
            tau: joint forces, (batch, nv) or (nv,).
            algorithm: "aba", "crba", "factorization" or "auto" (the fastest for the model).

        Raises:
            Error: FAILED_PRECONDITION when the system is singular (e.g. a massless leaf).
        """
        batch = _Batch(q)
        response = self._compute(
            "ForwardDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            tau=batch.rows("tau", tau),
            external_forces=batch.wrenches(external_forces),
            algorithm=_enum(
                dynamics_pb2.ForwardDynamicsAlgorithm, "FORWARD_DYNAMICS_ALGORITHM_", algorithm
            ),
        )
        return batch.unpack(response.a, -1)

    @overload
    def mass_matrix(
        self,
        model_id: str,
        q: npt.ArrayLike,
        *,
        inverse: Literal[False] = False,
        algorithm: MassMatrixAlgorithm = "crba",
        timeout: Optional[float] = None,
    ) -> Array:
        ...

    @overload
    def mass_matrix(
        self,
        model_id: str,
        q: npt.ArrayLike,
        *,
        inverse: Literal[True],
        algorithm: MassMatrixAlgorithm = "crba",
        timeout: Optional[float] = None,
    ) -> tuple[Array, Array]:
        ...

    def mass_matrix(
        self,
        model_id: str,
        q: npt.ArrayLike,
        *,
        inverse: bool = False,
        algorithm: MassMatrixAlgorithm = "crba",
        timeout: Optional[float] = None,
    ) -> Array | tuple[Array, Array]:
        """The joint-space mass matrix M(q), (batch, nv, nv) or (nv, nv).

        Args:
            q: configurations, (batch, nq) or (nq,).
            inverse: also compute M(q)^-1 (directly, in O(n^2)); then returns (M, M^-1).
            algorithm: "crba" or "lagrange_homogeneous".
            timeout: deadline in seconds; None: the client's.
        """
        batch = _Batch(q)
        response = self._compute(
            "MassMatrix",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            inverse=inverse,
            algorithm=_enum(dynamics_pb2.MassMatrixAlgorithm, "MASS_MATRIX_ALGORITHM_", algorithm),
        )
        if inverse:
            return batch.square(response.mass_matrix), batch.square(response.inverse)
        return batch.square(response.mass_matrix)

    def nonlinear_effects(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        *,
        timeout: Optional[float] = None,
    ) -> Array:
        """Nonlinear effects C(q, v) v + g(q), shaped like v."""
        batch = _Batch(q)
        response = self._compute(
            "NonlinearEffects",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
        )
        return batch.unpack(response.tau, -1)

    def gravity(self, model_id: str, q: npt.ArrayLike, *, timeout: Optional[float] = None) -> Array:
        """Generalized gravity g(q), the forces that hold the robot still: (batch, nv) or (nv,)."""
        batch = _Batch(q)
        response = self._compute("Gravity", model_id, timeout, batch_size=batch.size, q=batch.q)
        return batch.unpack(response.tau, -1)

    def kinematics(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: Optional[npt.ArrayLike] = None,
        *,
        frames: Sequence[str] = (),
        reference: ReferenceFrame = "local",
        jacobians: bool = False,
        timeout: Optional[float] = None,
    ) -> Kinematics:
        """Placements, and velocities (when v is given) and Jacobians (on request), of frames.

        Args:
            q: configurations, (batch, nq) or (nq,).
            v: velocities, (batch, nv) or (nv,); None: no frame velocities.
            frames: frame references (Model.frames: a name, or KIND:NAME for a name
                a link and a joint share; docs/api.md, "Frames"); empty: every frame.
            reference: how velocities and Jacobians are expressed: "local" (frame axes, at its
                origin), "local_world_aligned" (world axes, at its origin) or "world".
            jacobians: also return each frame's 6 x nv Jacobian.
            timeout: deadline in seconds; None: the client's.
        """
        batch = _Batch(q)
        response = self._compute(
            "Kinematics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=np.empty(0) if v is None else batch.rows("v", v),
            frames=list(frames),
            reference=_enum(dynamics_pb2.ReferenceFrame, "REFERENCE_FRAME_", reference),
            jacobians=jacobians,
        )
        count = len(response.frames)
        return Kinematics(
            frames=list(response.frames),
            positions=batch.unpack(response.positions, count, 3),
            rotations=batch.unpack(response.rotations, count, 3, 3),
            velocities=batch.unpack(response.velocities, count, 6) if v is not None else None,
            jacobians=batch.unpack(response.jacobians, count, 6, -1) if jacobians else None,
        )

    def hybrid_dynamics(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        acceleration_given: Sequence[bool] | npt.NDArray[np.bool_],
        a: npt.ArrayLike,
        tau: npt.ArrayLike,
        *,
        external_forces: Optional[npt.ArrayLike] = None,
        timeout: Optional[float] = None,
    ) -> AccelerationsAndForces:
        """Hybrid dynamics: per DOF, either its acceleration or its force is given.

        Args:
            acceleration_given: nv flags, the same for every state: True where `a` is given (the
                force is computed), False where `tau` is given (the acceleration is computed).
            a, tau: (batch, nv) or (nv,); the entries not given are ignored but must be finite.
            q, v, external_forces, timeout: as in inverse_dynamics.

        Returns:
            The complete accelerations and forces, each shaped like v.
        """
        batch = _Batch(q)
        inputs = [
            dynamics_pb2.DOF_INPUT_ACCELERATION if given else dynamics_pb2.DOF_INPUT_FORCE
            for given in np.asarray(acceleration_given, dtype=bool).ravel()
        ]
        response = self._compute(
            "HybridDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            inputs=inputs,
            a=batch.rows("a", a),
            tau=batch.rows("tau", tau),
            external_forces=batch.wrenches(external_forces),
        )
        return AccelerationsAndForces(batch.unpack(response.a, -1), batch.unpack(response.tau, -1))

    def floating_base_inverse_dynamics(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        a: npt.ArrayLike,
        *,
        external_forces: Optional[npt.ArrayLike] = None,
        timeout: Optional[float] = None,
    ) -> AccelerationsAndForces:
        """Inverse dynamics of a robot whose free-flyer root is unactuated.

        Args:
            a: joint accelerations, (batch, nv) or (nv,); the root's 6 entries are ignored.
            q, v, external_forces, timeout: as in inverse_dynamics.

        Returns:
            a with the root's entries replaced by the base acceleration, and tau with the root's
            entries 0.

        Raises:
            Error: FAILED_PRECONDITION when the model has no free-flyer root.
        """
        batch = _Batch(q)
        response = self._compute(
            "FloatingBaseInverseDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            a=batch.rows("a", a),
            external_forces=batch.wrenches(external_forces),
        )
        return AccelerationsAndForces(batch.unpack(response.a, -1), batch.unpack(response.tau, -1))

    def derivatives(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        *,
        a: Optional[npt.ArrayLike] = None,
        tau: Optional[npt.ArrayLike] = None,
        external_forces: Optional[npt.ArrayLike] = None,
        timeout: Optional[float] = None,
    ) -> Derivatives:
        """Analytic partial derivatives of inverse dynamics (given `a`) or forward dynamics
        (given `tau`); give exactly one of them.

        Returns:
            (d_dq, d_dv, d_du), each (batch, nv, nv) or (nv, nv).
        """
        if (a is None) == (tau is None):
            raise ValueError("derivatives: give exactly one of a (inverse) or tau (forward)")
        batch = _Batch(q)
        response = self._compute(
            "Derivatives",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            a=np.empty(0) if a is None else batch.rows("a", a),
            tau=np.empty(0) if tau is None else batch.rows("tau", tau),
            external_forces=batch.wrenches(external_forces),
            of=dynamics_pb2.DERIVATIVES_OF_INVERSE_DYNAMICS
            if a is not None
            else dynamics_pb2.DERIVATIVES_OF_FORWARD_DYNAMICS,
        )
        return Derivatives(
            batch.square(response.d_dq), batch.square(response.d_dv), batch.square(response.d_du)
        )

    def constrained_dynamics_derivatives(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        tau: npt.ArrayLike,
        *,
        constraints: Sequence[Constraint] = (),
        position_gain: float = 0.0,
        velocity_gain: float = 0.0,
        timeout: Optional[float] = None,
    ) -> ConstrainedDerivatives:
        """Analytic derivatives of constrained forward dynamics (Derivatives with
        DERIVATIVES_OF_CONSTRAINED_DYNAMICS): the accelerations and the constraint forces lambda
        under the model's loop closures and `constraints`, as constrained_dynamics takes them.

        Raises:
            Error: FAILED_PRECONDITION when the constrained system is singular.
        """
        batch = _Batch(q)
        response = self._compute(
            "Derivatives",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            tau=batch.rows("tau", tau),
            of=dynamics_pb2.DERIVATIVES_OF_CONSTRAINED_DYNAMICS,
            constraints=[_message(dynamics_pb2.Constraint, c) for c in constraints],
            gains=dynamics_pb2.BaumgarteGains(position=position_gain, velocity=velocity_gain),
        )
        rows = len(response.multipliers) // batch.size
        return ConstrainedDerivatives(
            da_dq=batch.square(response.d_dq),
            da_dv=batch.square(response.d_dv),
            da_dtau=batch.square(response.d_du),
            multipliers=batch.unpack(response.multipliers, rows),
            dmultipliers_dq=batch.unpack(response.dmultipliers_dq, rows, -1),
            dmultipliers_dv=batch.unpack(response.dmultipliers_dv, rows, -1),
            dmultipliers_dtau=batch.unpack(response.dmultipliers_dtau, rows, -1),
            rows=list(response.rows),
        )

    def coriolis_matrix(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        *,
        timeout: Optional[float] = None,
    ) -> Array:
        """The Coriolis matrix C(q, v) (C v = nonlinear effects - gravity), (batch, nv, nv)."""
        batch = _Batch(q)
        response = self._compute(
            "CoriolisMatrix",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
        )
        return batch.square(response.coriolis_matrix)

    def centroidal(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        *,
        timeout: Optional[float] = None,
    ) -> Centroidal:
        """Centre of mass, its velocity and Jacobian, centroidal momentum and its matrix."""
        batch = _Batch(q)
        response = self._compute(
            "Centroidal", model_id, timeout, batch_size=batch.size, q=batch.q, v=batch.rows("v", v)
        )
        return Centroidal(
            com=batch.unpack(response.com, 3),
            com_velocity=batch.unpack(response.com_velocity, 3),
            com_jacobian=batch.unpack(response.com_jacobian, 3, -1),
            momentum=batch.unpack(response.momentum, 6),
            momentum_matrix=batch.unpack(response.momentum_matrix, 6, -1),
        )

    def constrained_dynamics(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        tau: npt.ArrayLike,
        *,
        mode: ConstrainedDynamicsMode = "forward",
        a: Optional[npt.ArrayLike] = None,
        acceleration_given: Optional[Sequence[bool] | npt.NDArray[np.bool_]] = None,
        constraints: Sequence[Constraint] = (),
        position_gain: float = 0.0,
        velocity_gain: float = 0.0,
        timeout: Optional[float] = None,
    ) -> ConstrainedDynamics:
        """Dynamics under the model's loop closures and the call's own bilateral constraints.

        Args:
            q, v, timeout: as in inverse_dynamics.
            tau: joint forces, (batch, nv) or (nv,): every DOF's with mode "forward"; with
                "inverse" read where acceleration_given is False, ignored (but finite) elsewhere.
            mode: "forward" (a and lambda from tau) or "inverse" (closed-chain inverse dynamics:
                the actuated DOFs' accelerations given, their forces computed).
            a: "inverse" only: accelerations, like v, read where acceleration_given is True.
            acceleration_given: "inverse" only: nv flags, True for an actuated DOF.
            constraints: dynamics_pb2.Constraint messages or their proto JSON dicts, e.g.
                {"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": "tip"}}.
            position_gain, velocity_gain: Baumgarte's K_p (1/s^2) and K_d (1/s).

        Raises:
            Error: FAILED_PRECONDITION when the constrained system is singular.
        """
        inverse = mode == "inverse"
        if inverse != (a is not None) or inverse != (acceleration_given is not None):
            raise ValueError(
                'constrained_dynamics: a and acceleration_given go with mode="inverse" only'
            )
        batch = _Batch(q)
        inputs = [
            dynamics_pb2.DOF_INPUT_ACCELERATION if given else dynamics_pb2.DOF_INPUT_FORCE
            for given in np.asarray(acceleration_given if inverse else [], dtype=bool).ravel()
        ]
        response = self._compute(
            "ConstrainedDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            mode=_enum(dynamics_pb2.ConstrainedDynamicsMode, "CONSTRAINED_DYNAMICS_MODE_", mode),
            tau=batch.rows("tau", tau),
            a=batch.rows("a", a) if inverse else np.empty(0),
            inputs=inputs,
            constraints=[_message(dynamics_pb2.Constraint, c) for c in constraints],
            gains=dynamics_pb2.BaumgarteGains(position=position_gain, velocity=velocity_gain),
        )
        return ConstrainedDynamics(
            a=batch.unpack(response.a, -1),
            multipliers=batch.unpack(response.multipliers, -1),
            tau=batch.unpack(response.tau, -1) if inverse else None,
            rows=list(response.rows),
        )

    def contact_dynamics(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        tau: npt.ArrayLike,
        contacts: Sequence[PointContact],
        *,
        tolerance: Optional[float] = None,
        max_iterations: Optional[int] = None,
        slip_velocity: Optional[float] = None,
        timeout: Optional[float] = None,
    ) -> ContactSolution:
        """Accelerations and contact forces with closed point contacts on static surfaces.

        Args:
            q, v, timeout: as in inverse_dynamics.
            tau: joint forces, (batch, nv) or (nv,).
            contacts: dynamics_pb2.PointContact messages or their proto JSON dicts, e.g.
                {"frame": "FL_foot", "normal": [0, 0, 1], "friction": 0.8}; the same C contacts
                for every state.
            tolerance, max_iterations, slip_velocity: solver options; None: the server's default.

        Returns:
            ContactSolution with result = accelerations and contact = forces (N).
        """
        batch = _Batch(q)
        response = self._compute(
            "ContactDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            tau=batch.rows("tau", tau),
            contacts=[_message(dynamics_pb2.PointContact, c) for c in contacts],
            solver=_solver_options(tolerance, max_iterations, slip_velocity),
        )
        return _contact_solution(batch, response, response.a, response.forces)

    def impact(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        contacts: Sequence[PointContact],
        *,
        restitution: float = 0.0,
        tolerance: Optional[float] = None,
        max_iterations: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> ContactSolution:
        """Velocities just after the given contacts are hit, and the impulses.

        Args:
            q, timeout: as in inverse_dynamics.
            v: velocities just before the impact, (batch, nv) or (nv,).
            contacts: as in contact_dynamics.
            restitution: Poisson's coefficient in [0, 1]: 0 plastic, 1 elastic.
            tolerance, max_iterations: solver options; None: the server's default.

        Returns:
            ContactSolution with result = post-impact velocities and contact = impulses (N s).
        """
        batch = _Batch(q)
        response = self._compute(
            "Impact",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            contacts=[_message(dynamics_pb2.PointContact, c) for c in contacts],
            restitution=restitution,
            solver=_solver_options(tolerance, max_iterations, None),
        )
        return _contact_solution(batch, response, response.v, response.impulses)

    def simulate(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        steps: int,
        *,
        time_step: Optional[float] = None,
        integrator: Integrator = "semi_implicit_euler",
        tau: Optional[npt.ArrayLike] = None,
        candidates: Sequence[ContactCandidate] = (),
        ground_height: float = 0.0,
        friction: float = 0.0,
        restitution: float = 0.0,
        contact_margin: Optional[float] = None,
        stabilization: Optional[float] = None,
        restitution_velocity: Optional[float] = None,
        tolerance: Optional[float] = None,
        max_iterations: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> Simulation:
        """Trajectories of `steps` steps from each initial state (q, v).

        Args:
            q, v: initial states, (batch, nq) and (batch, nv), or 1-D for one trajectory.
            steps: 1 to 100,000.
            time_step: seconds; None: the server's default (1e-3).
            integrator: "semi_implicit_euler", or "explicit_euler" or "rk4" (contact-free only).
            tau: None (zero torque); one per state, held for every step ((batch, nv) or (nv,));
                or one per step ((batch, steps, nv) or (steps, nv)).
            candidates: dynamics_pb2.ContactCandidate messages or their proto JSON dicts, e.g.
                {"frame": "FL_foot"}: the points that may touch the ground plane; none: no
                contacts.
            ground_height, friction, restitution: the plane z = ground_height and its contacts.
            contact_margin, stabilization, restitution_velocity, tolerance, max_iterations:
                None takes the server's default (proto/torqued/v1/dynamics.proto).
        """
        batch = _Batch(q)
        torques = np.empty(0)
        if tau is not None:
            torques = np.asarray(tau, dtype=np.float64)
            held = 1 if batch.single else 2
            if torques.ndim not in (held, held + 1) or (
                not batch.single and torques.shape[0] != batch.size
            ):
                raise ValueError(
                    f"tau: expected one row per state, or per step, got {torques.shape}"
                )
            torques = torques.ravel()
        optional = {
            name: value
            for name, value in (
                ("time_step", time_step),
                ("contact_margin", contact_margin),
                ("stabilization", stabilization),
                ("restitution_velocity", restitution_velocity),
            )
            if value is not None
        }
        response = self._compute(
            "Simulate",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            steps=steps,
            integrator=_enum(dynamics_pb2.Integrator, "INTEGRATOR_", integrator),
            tau=torques,
            ground=dynamics_pb2.GroundPlane(
                height=ground_height, friction=friction, restitution=restitution
            ),
            candidates=[_message(dynamics_pb2.ContactCandidate, c) for c in candidates],
            solver=_solver_options(tolerance, max_iterations, None),
            **optional,
        )
        return Simulation(
            q=batch.unpack(response.q, steps, -1),
            v=batch.unpack(response.v, steps, -1),
            status=batch.unpack(np.array(response.status, dtype=np.int32)),
            max_iterations=batch.unpack(np.array(response.max_iterations, dtype=np.uint32)),
            max_residual=batch.unpack(response.max_residual),
            max_contacts=batch.unpack(np.array(response.max_contacts, dtype=np.uint32)),
        )

    def linearize(
        self,
        model_id: str,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        u: npt.ArrayLike,
        *,
        dt: float,
        integrator: Integrator = "semi_implicit_euler",
        actuation: Actuation = "all",
        continuous_derivatives: bool = False,
        constraints: Sequence[Constraint] = (),
        position_gain: float = 0.0,
        velocity_gain: float = 0.0,
        timeout: Optional[float] = None,
    ) -> Linearization:
        """The discrete step x+ = f(x, u) and its Jacobians at each knot of a horizon.

        Args:
            q, v, u: the knots, (K, nq), (K, nv) and (K, nu), or 1-D for one knot.
            dt: the step, seconds, > 0.
            integrator: "semi_implicit_euler" (Crocoddyl's), "explicit_euler" or "rk4".
            actuation: "all" (u = tau, nu = nv), "unactuated_root" (u = tau of every joint
                but a free-flyer root, nu = nv - 6), or a list of joint names (u drives their
                DOFs, in the order named).
            continuous_derivatives: also return da/dq, da/dv and da/dtau at each knot, and
                with constraints lambda and its derivatives.
            constraints: rigid contacts holding the robot at every knot, as constrained_dynamics
                takes them, e.g. {"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": "FL_FOOT"}}
                (a 3D contact; CONSTRAINT_TYPE_WELD for 6D). The model's loop closures hold it in
                any case.
            position_gain, velocity_gain: Baumgarte's K_p (1/s^2) and K_d (1/s) on the
                constraints; 0: held at the acceleration level, as Crocoddyl holds contacts.
        """
        batch = _Batch(q)
        # An Euler step's q+ rows follow from its v+ rows (StepJacobians in dynamics.proto): the
        # answer carries those and Fx and Fu are assembled here, half the bytes on the wire.
        velocity_rows = integrator != "rk4"
        response = self._compute(
            "Linearize",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            u=batch.rows("u", u),
            dt=dt,
            integrator=_enum(dynamics_pb2.Integrator, "INTEGRATOR_", integrator),
            actuation=_actuation(actuation),
            continuous_derivatives=continuous_derivatives,
            constraints=[_message(dynamics_pb2.Constraint, c) for c in constraints],
            gains=dynamics_pb2.BaumgarteGains(position=position_gain, velocity=velocity_gain),
            jacobians=dynamics_pb2.STEP_JACOBIANS_VELOCITY_ROWS
            if velocity_rows
            else dynamics_pb2.STEP_JACOBIANS_DENSE,
        )
        nv = len(response.v_next) // batch.size
        nx = 2 * nv
        rows = len(response.multipliers) // batch.size
        if velocity_rows:
            fx, fu = _euler_step_jacobians(
                response.dv_next_dx.reshape(batch.size, nv, nx),
                response.dv_next_du.reshape(batch.size, nv, response.nu),
                response,
                dt,
                explicit=integrator == "explicit_euler",
            )
            fx = batch.unpack(fx.ravel(), nx, nx)
            fu = batch.unpack(fu.ravel(), nx, response.nu)
        else:
            fx = batch.unpack(response.fx, nx, nx)
            fu = batch.unpack(response.fu, nx, response.nu)

        def derivative(values: Any) -> Optional[Array]:
            return batch.square(values) if len(values) else None

        def by_rows(values: Any, *shape: int) -> Optional[Array]:
            return batch.unpack(values, *shape) if rows else None

        return Linearization(
            q_next=batch.unpack(response.q_next, -1),
            v_next=batch.unpack(response.v_next, -1),
            fx=fx,
            fu=fu,
            da_dq=derivative(response.da_dq),
            da_dv=derivative(response.da_dv),
            da_dtau=derivative(response.da_dtau),
            multipliers=by_rows(response.multipliers, rows),
            dmultipliers_dq=by_rows(response.dmultipliers_dq, rows, -1),
            dmultipliers_dv=by_rows(response.dmultipliers_dv, rows, -1),
            dmultipliers_dtau=by_rows(response.dmultipliers_dtau, rows, -1),
            rows=list(response.rows),
        )

    def rollout(
        self,
        model_id: str,
        q0: npt.ArrayLike,
        v0: npt.ArrayLike,
        u: npt.ArrayLike,
        *,
        dt: float,
        integrator: Integrator = "semi_implicit_euler",
        actuation: Actuation = "all",
        constraints: Sequence[Constraint] = (),
        position_gain: float = 0.0,
        velocity_gain: float = 0.0,
        q_nominal: Optional[npt.ArrayLike] = None,
        v_nominal: Optional[npt.ArrayLike] = None,
        feedback: Optional[npt.ArrayLike] = None,
        jacobians: bool = False,
        frames: Sequence[str] = (),
        frame_jacobians: bool = False,
        reference: ReferenceFrame = "local",
        timeout: Optional[float] = None,
    ) -> Rollouts:
        """A shooting solver's forward pass: K steps from x0 under u_k + K_k (x_k - xbar_k).

        The step is linearize's; x - xbar is the tangent-space difference, in the coordinates
        of fx's columns (dq with xbar + dq = x, then dv).

        Args:
            q0, v0: the start of each rollout, (R, nq) and (R, nv), or 1-D for one rollout.
            u: the feed-forward controls, (R, K, nu), or (K, nu) for one rollout.
            dt, integrator, actuation, constraints, position_gain, velocity_gain: the step, as
                linearize takes it.
            q_nominal, v_nominal, feedback: the nominal trajectory, (K, nq) and (K, nv), and the
                gains K_k, (K, nu, 2 nv), shared by the rollouts; all three or none (open loop).
            jacobians: also return fx and fu of every step.
            frames: frame references (as kinematics takes them) whose placements are
                returned at every state.
            frame_jacobians: and their Jacobians, expressed as `reference` says.
        """
        batch = _Batch(q0)
        controls = np.asarray(u, dtype=np.float64)
        if controls.ndim != (2 if batch.single else 3) or (
            not batch.single and controls.shape[0] != batch.size
        ):
            wanted = "(K, nu)" if batch.single else f"({batch.size}, K, nu)"
            raise ValueError(f"u: expected shape {wanted}, got {controls.shape}")
        knots = controls.shape[-2]
        closed_loop = [x is not None for x in (q_nominal, v_nominal, feedback)]
        if any(closed_loop) and not all(closed_loop):
            raise ValueError("q_nominal, v_nominal and feedback: give all three or none")

        def flat(values: Optional[npt.ArrayLike]) -> Array:
            return np.empty(0) if values is None else np.asarray(values, np.float64).ravel()

        velocity_rows = jacobians and integrator != "rk4"

        response = self._compute(
            "Rollout",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v0", v0),
            knots=knots,
            u=controls.ravel(),
            dt=dt,
            integrator=_enum(dynamics_pb2.Integrator, "INTEGRATOR_", integrator),
            actuation=_actuation(actuation),
            constraints=[_message(dynamics_pb2.Constraint, c) for c in constraints],
            gains=dynamics_pb2.BaumgarteGains(position=position_gain, velocity=velocity_gain),
            q_nominal=flat(q_nominal),
            v_nominal=flat(v_nominal),
            feedback=flat(feedback),
            jacobians=jacobians,
            # As linearize: an Euler step's Fx and Fu come as their v+ rows and are assembled here.
            jacobian_layout=dynamics_pb2.STEP_JACOBIANS_VELOCITY_ROWS
            if velocity_rows
            else dynamics_pb2.STEP_JACOBIANS_DENSE,
            frames=list(frames),
            frame_jacobians=frame_jacobians,
            reference=_enum(dynamics_pb2.ReferenceFrame, "REFERENCE_FRAME_", reference),
        )
        states = knots + 1
        nv = len(response.v) // (batch.size * states)
        nx = 2 * nv
        count = len(response.frames)

        def unpack(values: Any, *shape: int) -> Optional[Array]:
            return batch.unpack(values, *shape) if len(values) else None

        fx: Optional[Array] = None
        fu: Optional[Array] = None
        if velocity_rows:
            step_count = batch.size * knots
            fx, fu = _euler_step_jacobians(
                response.dv_next_dx.reshape(step_count, nv, nx),
                response.dv_next_du.reshape(step_count, nv, response.nu),
                response,
                dt,
                explicit=integrator == "explicit_euler",
            )
            # Zeros past a diverged rollout's steps, as the full Jacobians come.
            for r, taken in enumerate(response.steps):
                fx[r * knots + taken : (r + 1) * knots] = 0.0
                fu[r * knots + taken : (r + 1) * knots] = 0.0
            fx = batch.unpack(fx.ravel(), knots, nx, nx)
            fu = batch.unpack(fu.ravel(), knots, nx, response.nu)
        elif jacobians:
            fx = batch.unpack(response.fx, knots, nx, nx)
            fu = batch.unpack(response.fu, knots, nx, response.nu)
        steps = np.array(response.steps, dtype=np.int64)
        return Rollouts(
            steps=int(steps[0]) if batch.single else steps,
            errors=[status.message for status in response.status],
            q=batch.unpack(response.q, states, -1),
            v=batch.unpack(response.v, states, nv),
            u=batch.unpack(response.u, knots, response.nu),
            fx=fx,
            fu=fu,
            multipliers=unpack(response.multipliers, knots, -1),
            frames=list(response.frames),
            frame_positions=unpack(response.frame_positions, states, count, 3),
            frame_rotations=unpack(response.frame_rotations, states, count, 3, 3),
            frame_jacobians=unpack(response.frame_jacobians, states, count, 6, nv),
            rows=list(response.rows),
        )

    def session(self, model_id: str = "", *, timeout: Optional[float] = None) -> Session:
        """Opens a Session stream (see Session); use it as a context manager.

        Args:
            model_id: the stream's model, sent with the first message; empty: none (each
                message then names its own with send's model_id).
            timeout: deadline of the whole stream in seconds; None: the client's.
        """
        budget = self._timeout if timeout is None else timeout
        return Session(self._session, self._session_codec, model_id, budget, self._metadata)

    def echo(
        self,
        payload: bytes = b"",
        values: Optional[npt.ArrayLike] = None,
        *,
        response_values: int = 0,
        timeout: Optional[float] = None,
    ) -> tuple[bytes, Array]:
        """Sends bytes and numbers that come back untouched (the transport alone, no compute).

        With response_values > 0 the answer carries that many zeros instead of the numbers: the
        floor of a call whose request and answer differ in size.
        """
        numbers = np.empty(0) if values is None else np.asarray(values, dtype=np.float64).ravel()
        call = self._calls["Echo"]
        request = call.request(payload=payload, values=numbers, response_values=response_values)
        response = self._invoke("DynamicsService/Echo", call.rpc, request, self._deadline(timeout))
        return response.payload, response.values
