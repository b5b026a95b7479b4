"""ControlService: a robot's optimal-control problem, built here as Crocoddyl builds one and solved
on the server (FDDP, box-FDDP with control bounds), where its dynamics are.

    target = [0.15, 0.25, 0.1]
    problem = torqued.OptimalControlProblem(arm.id, q0, v0, knots=50, dt=0.02)
    reach = torqued.residuals.frame_translation("link6", target)
    problem.add_running_cost("reach", reach, weight=10.0)
    problem.add_running_cost("effort", torqued.residuals.control_gravity(), weight=1e-3)
    problem.add_terminal_cost("final_reach", reach, weight=1e5)
    solution = client.solve(problem)          # solution.q (51, nq), solution.u (50, nu), ...

The problem is control.proto's SolveRequest: to_request() gives it. Residuals and activations
come from torqued.residuals and torqued.activations, contacts from contact().
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal, Mapping, Optional, Sequence, Union

import grpc
import numpy as np
import numpy.typing as npt

from torqued._connection import Connection
from torqued._conversions import Actuation, Integrator, actuation_message, enum_value, phase_message
from torqued._wire import PackedCall
from torqued.mpc import Mpc
from torqued.results import Solution, solution_from
from torqued.v1 import control_pb2, dynamics_pb2, model_pb2

# How far a rotation matrix may be from orthonormal: the rounding of a matrix computed in double
# precision is some 1e-15; a matrix off by more than this is a mistake, not rounding.
ROTATION_TOLERANCE = 1e-6

# A contact of a phase: contact()'s Constraint, its proto JSON dict, or a frame's name alone (a
# point contact that holds the frame where it stands at the phase's first knot).
Contact = Union[str, dynamics_pb2.Constraint, Mapping[str, Any]]
# The running knots a cost term covers: every one (None), a range(first, end), or (first, end)
# with end None for the horizon's end.
KnotRange = Union[None, range, tuple[int, Optional[int]]]
# A warm start: a previous Solution, (q, v, u) with q (T + 1, nq), v (T + 1, nv) and u (T, nu),
# or Crocoddyl's (xs, us) with xs (T + 1, nq + nv).
Guess = Union[Solution, tuple[npt.ArrayLike, ...]]


def doubles(values: Optional[npt.ArrayLike]) -> list[float]:
    """A repeated double field's values, flattened; none for None."""
    return [] if values is None else np.asarray(values, dtype=np.float64).ravel().tolist()


def vector3(values: npt.ArrayLike, field: str) -> model_pb2.Vector3:
    """A Vector3 of 3 values; `field` names them in the error of another count."""
    array = np.asarray(values, dtype=np.float64)
    if array.shape != (3,):
        raise ValueError(f"{field}: expected 3 values, got shape {array.shape}")
    return model_pb2.Vector3(x=array[0], y=array[1], z=array[2])


def rpy_of(rotation: npt.ArrayLike, field: str) -> tuple[float, float, float]:
    """(roll, pitch, yaw) with R = Rz(yaw) Ry(pitch) Rx(roll), from a 3 x 3 rotation matrix, or
    the three angles themselves.

    Raises:
        ValueError: neither shape, or a matrix that is not a rotation (non-finite, not
            orthonormal within ROTATION_TOLERANCE, or a reflection).
    """
    matrix = np.asarray(rotation, dtype=np.float64)
    if matrix.shape == (3,):
        roll, pitch, yaw = matrix.tolist()
        return roll, pitch, yaw
    if matrix.shape != (3, 3):
        raise ValueError(
            f"{field}: expected a 3 x 3 rotation matrix or (roll, pitch, yaw), got shape "
            f"{matrix.shape}"
        )
    if (
        not np.all(np.isfinite(matrix))
        or np.abs(matrix.T @ matrix - np.eye(3)).max() > ROTATION_TOLERANCE
        or np.linalg.det(matrix) < 0.0
    ):
        raise ValueError(f"{field}: not a rotation matrix: {matrix.tolist()}")
    yaw = math.atan2(matrix[1, 0], matrix[0, 0])
    # What is left once the yaw is undone, Rz(yaw)^T R = Ry(pitch) Rx(roll), has entries of order
    # one at any pitch: reading roll and pitch from it keeps them accurate near pitch = +-pi/2,
    # where R's own entries for them vanish with cos(pitch) (and the yaw is arbitrary).
    c, s = math.cos(yaw), math.sin(yaw)
    rest = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]]) @ matrix
    pitch = math.atan2(-rest[2, 0], rest[0, 0])
    roll = math.atan2(-rest[1, 2], rest[1, 1])
    return roll, pitch, yaw


def placement_message(
    translation: Optional[npt.ArrayLike], rotation: Optional[npt.ArrayLike], field: str
) -> model_pb2.Placement:
    """A Placement at `translation` (None: the origin) turned by `rotation` (a 3 x 3 matrix or
    (roll, pitch, yaw); None: the parent's axes)."""
    placement = model_pb2.Placement()
    if translation is not None:
        placement.xyz.CopyFrom(vector3(translation, f"{field}.translation"))
    if rotation is not None:
        roll, pitch, yaw = rpy_of(rotation, f"{field}.rotation")
        placement.rpy.CopyFrom(model_pb2.Vector3(x=roll, y=pitch, z=yaw))
    return placement


def contact(
    frame: str,
    kind: Literal["point", "weld"] = "point",
    *,
    translation: Optional[npt.ArrayLike] = None,
    rotation: Optional[npt.ArrayLike] = None,
) -> dynamics_pb2.Constraint:
    """A rigid contact of `frame` with the world: a point (3D, CONSTRAINT_TYPE_POINT) or a weld
    (6D, CONSTRAINT_TYPE_WELD).

    Args:
        frame: a frame reference of the model, e.g. "FL_foot".
        kind: "point" holds the frame's origin, "weld" its whole placement.
        translation, rotation: the world anchor it is held at (rotation a 3 x 3 matrix or
            (roll, pitch, yaw); a point ignores it). Neither: where the frame stands when the
            contact begins.
    """
    kinds = {"point": model_pb2.CONSTRAINT_TYPE_POINT, "weld": model_pb2.CONSTRAINT_TYPE_WELD}
    if kind not in kinds:
        raise ValueError(f"contact kind {kind!r}: expected 'point' or 'weld'")
    held = dynamics_pb2.Constraint(
        type=kinds[kind], frame1=dynamics_pb2.ConstraintFrame(frame=frame)
    )
    if translation is not None or rotation is not None:
        held.frame2.placement.CopyFrom(placement_message(translation, rotation, "contact"))
    return held


class OptimalControlProblem:
    """An optimal-control problem over `knots` running knots and a terminal one, Crocoddyl's
    multiple-shooting form (control.proto states it):

        min sum_t dt sum_i w_i a_i(r_i(x_t, u_t)) + sum_i w_i a_i(r_i(x_T))
        subject to x_0 = (q0, v0), x_{t+1} = step(x_t, u_t)

    The step is linearize's: its integrator, actuation and contact phases. Each method adds to
    the problem; to_request() gives the SolveRequest it makes, Client.solve solves it.
    """

    def __init__(
        self,
        model: Union[str, model_pb2.Model],
        q0: npt.ArrayLike,
        v0: npt.ArrayLike,
        *,
        knots: int,
        dt: float,
        integrator: Integrator = "semi_implicit_euler",
    ) -> None:
        """The start and the horizon; the methods add the rest.

        Args:
            model: a registered model's id, or the model (register's or get_model's answer).
            q0, v0: the initial state x_0, nq and nv values.
            knots: the running knots T; the solution has T + 1 states and T controls.
            dt: every knot's step, seconds.
            integrator: "semi_implicit_euler" (Crocoddyl's), "explicit_euler" or "rk4".
        """
        self._request = control_pb2.SolveRequest(
            model_id=model if isinstance(model, str) else model.id,
            q0=doubles(q0),
            v0=doubles(v0),
            knots=knots,
            dt=dt,
            integrator=enum_value(dynamics_pb2.Integrator, "INTEGRATOR_", integrator),
        )
        # The request serialized, from the first solve until the problem changes: a solve sends
        # these bytes and its own options after them (protobuf merges concatenated messages).
        self._serialized: Optional[bytes] = None

    @property
    def _editable(self) -> control_pb2.SolveRequest:
        """The request, for a method that changes it."""
        self._serialized = None
        return self._request

    def actuation(self, actuation: Actuation) -> None:
        """Which DOFs the controls drive: "all" (the default; nu = nv), "unactuated_root" (every
        DOF but a free-flyer root's; nu = nv - 6) or a list of joint names."""
        self._editable.actuation.CopyFrom(actuation_message(actuation))

    def add_phase(
        self, first_knot: int, contacts: Sequence[Contact], restitution: float = 0.0
    ) -> None:
        """Holds the robot by `contacts` from `first_knot` to the next phase's (or the horizon's
        end); the first phase begins at knot 0, and none at all means no contacts. A phase that
        adds a contact begins with its touchdown, an impact with this restitution (0: plastic).

        Args:
            contacts: contact()'s, or frame names alone: point contacts that hold each frame
                where it stands at first_knot; none: a flight phase.
        """
        held = [contact(c) if isinstance(c, str) else c for c in contacts]
        self._editable.phases.append(phase_message((first_knot, held, restitution)))

    def baumgarte_gains(self, position: float = 0.0, velocity: float = 0.0) -> None:
        """Baumgarte's K_p (1/s^2) and K_d (1/s) on every contact; unset: none, the contacts held
        at the acceleration level as Crocoddyl holds them."""
        self._editable.gains.CopyFrom(
            dynamics_pb2.BaumgarteGains(position=position, velocity=velocity)
        )

    def add_running_cost(
        self,
        name: str,
        residual: control_pb2.Residual,
        activation: Optional[control_pb2.Activation] = None,
        weight: float = 1.0,
        knots: KnotRange = None,
    ) -> None:
        """Adds weight * activation(residual) * dt at the running knots `knots` covers.

        Args:
            name: unique among the problem's terms; it names the term in Solution.cost_terms and
                in errors.
            residual: from torqued.residuals.
            activation: from torqued.activations; None: quadratic, 1/2 |r|^2.
            knots: None (every running knot), range(first, end), or (first, end) with end None
                for the horizon's end.
        """
        term = self._term(name, residual, activation, weight)
        if isinstance(knots, range):
            if knots.step != 1:
                raise ValueError(f"running cost {name!r}: knots: a range of step 1, got {knots}")
            first, end = knots.start, knots.stop
        elif knots is None:
            first, end = 0, None
        else:
            first, end = knots
        term.first_knot = first
        if end is not None:
            term.end_knot = end
        self._editable.running_costs.append(term)

    def add_terminal_cost(
        self,
        name: str,
        residual: control_pb2.Residual,
        activation: Optional[control_pb2.Activation] = None,
        weight: float = 1.0,
    ) -> None:
        """Adds weight * activation(residual) at the terminal knot (no dt; residuals of the state
        alone)."""
        self._editable.terminal_costs.append(self._term(name, residual, activation, weight))

    def control_bounds(self, lower: npt.ArrayLike, upper: npt.ArrayLike) -> None:
        """lower <= u <= upper at every running knot, nu values each (+-inf where a control is
        free): the solver becomes box-FDDP."""
        self._editable.control_bounds.CopyFrom(
            control_pb2.ControlBounds(lower=doubles(lower), upper=doubles(upper))
        )

    def solver(
        self,
        *,
        max_iterations: Optional[int] = None,
        stop_threshold: Optional[float] = None,
        initial_regularization: Optional[float] = None,
        min_regularization: Optional[float] = None,
        max_regularization: Optional[float] = None,
        regularization_factor: Optional[float] = None,
        accept_ratio: Optional[float] = None,
        accept_gap_ratio: Optional[float] = None,
        gradient_threshold: Optional[float] = None,
        decrease_above: Optional[float] = None,
        increase_at_most: Optional[float] = None,
    ) -> None:
        """FDDP's settings (control.proto's SolverSettings, Crocoddyl's names in brackets there);
        each one not given keeps Crocoddyl's default (100 iterations, stop threshold 1e-9,
        regularization from 1e-9 within [1e-9, 1e9] by factors of 10, th_acceptstep 0.1,
        th_acceptnegstep 2, th_grad 1e-12, th_stepdec 0.5, th_stepinc 0.01)."""
        given = {
            "max_iterations": max_iterations,
            "stop_threshold": stop_threshold,
            "initial_regularization": initial_regularization,
            "min_regularization": min_regularization,
            "max_regularization": max_regularization,
            "regularization_factor": regularization_factor,
            "accept_ratio": accept_ratio,
            "accept_gap_ratio": accept_gap_ratio,
            "gradient_threshold": gradient_threshold,
            "decrease_above": decrease_above,
            "increase_at_most": increase_at_most,
        }
        for field, value in given.items():
            if value is not None:
                setattr(self._editable.solver, field, value)

    def to_request(self) -> control_pb2.SolveRequest:
        """The SolveRequest of the problem (a copy), without a guess or the call's options."""
        request = control_pb2.SolveRequest()
        request.CopyFrom(self._request)
        return request

    def _call_bytes(self, options: control_pb2.SolveRequest) -> bytes:
        """The serialized SolveRequest of the problem with the call's `options` set."""
        if self._serialized is None:
            self._serialized = self._request.SerializeToString()
        return self._serialized + options.SerializeToString()

    @staticmethod
    def _term(
        name: str,
        residual: control_pb2.Residual,
        activation: Optional[control_pb2.Activation],
        weight: float,
    ) -> control_pb2.CostTerm:
        term = control_pb2.CostTerm(name=name, residual=residual, weight=weight)
        if activation is not None:
            term.activation.CopyFrom(activation)
        return term


def guess_arrays(guess: Guess, nq: int) -> dict[str, npt.NDArray[np.float64]]:
    """SolveRequest's guess_q, guess_v and guess_u from a Solution, (q, v, u) or (xs, us)."""
    if isinstance(guess, Solution):
        q, v, u = guess.q, guess.v, guess.u
    elif len(guess) == 3:
        q, v, u = guess
    elif len(guess) == 2:
        xs = np.asarray(guess[0], dtype=np.float64)
        if xs.ndim != 2:
            raise ValueError(f"guess: xs: expected shape (T + 1, nq + nv), got {xs.shape}")
        q, v, u = xs[:, :nq], xs[:, nq:], guess[1]
    else:
        raise ValueError(
            f"guess: expected a Solution, (q, v, u) or (xs, us), got {len(guess)} items"
        )
    return {
        field: np.asarray(values, dtype=np.float64).ravel()
        for field, values in (("guess_q", q), ("guess_v", v), ("guess_u", u))
    }


class ControlMethods(Connection):
    """Client's ControlService methods: Solve, and Mpc's stream."""

    @functools.cached_property
    def _solve_call(self) -> PackedCall:
        # Made on first use: a client that never solves never needs it.
        method = control_pb2.DESCRIPTOR.services_by_name["ControlService"].methods_by_name["Solve"]
        return PackedCall(self._channel, method, messages=control_pb2)

    def solve(
        self,
        problem: OptimalControlProblem,
        *,
        guess: Optional[Guess] = None,
        guess_feasible: bool = False,
        feedback: bool = False,
        max_seconds: float = 0.0,
        timeout: Optional[float] = None,
    ) -> Solution:
        """Solves an optimal-control problem on the server (FDDP; box-FDDP with control bounds).

        Args:
            problem: the OptimalControlProblem.
            guess: a warm start: a previous Solution, (q, v, u) shaped (T + 1, nq), (T + 1, nv)
                and (T, nu), or Crocoddyl's (xs, us) with xs (T + 1, nq + nv). None: a cold
                start, x0 at every knot and each knot's quasi-static controls.
            guess_feasible: the guess is the rollout of its controls from x0 (no gaps), as a
                previous solution of the same problem is when it was feasible.
            feedback: also return the feedback gains.
            max_seconds: the server's time budget; when it runs out, the answer is the best
                iterate so far (stop_reason "time_budget"), not an error. 0: none.
            timeout: deadline in seconds; None: the client's. Near it the server stops as with
                max_seconds, so that the answer arrives in time.

        Raises:
            Error: INVALID_ARGUMENT naming the field at fault (e.g. 'running_costs[2]
                ("foot_force").residual.reference'), RESOURCE_EXHAUSTED naming the server flag
                of a limit passed (knots, cost terms, iterations), NOT_FOUND for an unknown model.
        """
        options = control_pb2.SolveRequest(
            guess_feasible=guess_feasible, feedback=feedback, max_seconds=max_seconds
        )
        request = problem._call_bytes(options)
        arrays = {} if guess is None else guess_arrays(guess, len(problem._request.q0))
        call = self._solve_call
        response = self._on_model(
            "ControlService/Solve", call.rpc, (request, arrays), problem._request.model_id, timeout
        )
        return solution_of(response)


    @functools.cached_property
    def _mpc_call(self) -> grpc.StreamStreamMultiCallable:
        return self._channel.stream_stream(
            "/torqued.v1.ControlService/Mpc",
            response_deserializer=control_pb2.MpcResponse.FromString,
        )

    def mpc(
        self,
        problem: OptimalControlProblem,
        *,
        time: float = 0.0,
        iterations: Optional[int] = None,
        max_seconds: float = 0.0,
        plan: bool = False,
        timeout: Optional[float] = None,
    ) -> Mpc:
        """Opens an Mpc stream on `problem` and solves it (see Mpc); use it as a context manager.

        Args:
            problem: the OptimalControlProblem; its x0 is the state at `time`.
            time: the time of x0, seconds, on the clock the ticks' times follow.
            iterations: the first solve's iterations; None: the problem's solver settings'.
            max_seconds: the first solve's time budget; 0: none.
            plan: also return the whole first plan in Mpc.first.
            timeout: deadline of the whole stream in seconds; None: the client's.

        Raises:
            Error: as solve raises it, for the first solve.
        """
        request = problem.to_request()
        budget = self._timeout if timeout is None else timeout
        return Mpc(
            self._mpc_call,
            request,
            len(request.v0),
            budget,
            self._metadata,
            time=time,
            iterations=iterations,
            max_seconds=max_seconds,
            plan=plan,
        )


def solution_of(response: Any) -> Solution:
    """The Solution of a SolveResponse (its double fields as arrays, see _wire.Reply)."""
    knots, nu = response.knots, response.nu
    v = response.v.reshape(knots + 1, -1)
    nv = v.shape[1]
    return solution_from(
        response,
        q=response.q.reshape(knots + 1, -1),
        v=v,
        u=response.u.reshape(knots, nu),
        feedback=response.feedback.reshape(knots, nu, 2 * nv) if len(response.feedback) else None,
    )
