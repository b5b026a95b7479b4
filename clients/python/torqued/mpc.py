"""Client.mpc(): model predictive control over a ControlService.Mpc stream."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence

import grpc
import numpy as np
import numpy.typing as npt

from torqued.errors import Error
from torqued.results import Array, Solution, solution_from
from torqued.session import OutgoingMessages
from torqued.v1 import control_pb2

_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}
_METHOD = "ControlService/Mpc"


class MpcStep(NamedTuple):
    """The answer to one message of an Mpc stream.

    Attributes:
        u0: the first control, (nu,).
        feedback0: its gains K0, (nu, 2 nv), of the policy u(x) = u0 + K0 (x - x0), x0 the
            solution's first state and x - x0 the tangent difference (dq then dv), Rollout's sign.
        shift: the knots the last solution was shifted by before it warm-started the solver.
        solution: the solve's outcome (stop reason, iterations, cost, cost terms, gaps, time);
            its q, v and u have no rows and its feedback is None unless the plan was asked for.
    """

    u0: Array
    feedback0: Array
    shift: int
    solution: Solution


def term_update(
    name: str,
    *,
    reference: Optional[npt.ArrayLike] = None,
    placement: Optional[Any] = None,
    weight: Optional[float] = None,
) -> control_pb2.TermUpdate:
    """A new reference, placement target (a model_pb2.Placement) or weight for the cost terms
    named `name`."""
    update = control_pb2.TermUpdate(name=name)
    if reference is not None:
        update.reference.extend(np.asarray(reference, dtype=np.float64).ravel().tolist())
    if placement is not None:
        update.placement.CopyFrom(placement)
    if weight is not None:
        update.weight = float(weight)
    return update


def _step_of(response: control_pb2.MpcResponse, nv: int) -> MpcStep:
    solution = response.solution
    knots, nu = solution.knots, solution.nu
    q = np.asarray(solution.q, dtype=np.float64)
    v = np.asarray(solution.v, dtype=np.float64)
    u = np.asarray(solution.u, dtype=np.float64)
    gains = np.asarray(solution.feedback, dtype=np.float64)
    rows = knots + 1 if len(v) else 0
    return MpcStep(
        u0=np.asarray(response.u0, dtype=np.float64),
        feedback0=np.asarray(response.feedback0, dtype=np.float64).reshape(nu, 2 * nv),
        shift=response.shift,
        solution=solution_from(
            solution,
            q=q.reshape(rows, -1) if rows else q.reshape(0, 0),
            v=v.reshape(rows, nv),
            u=u.reshape(knots if len(u) else 0, nu),
            feedback=gains.reshape(knots, nu, 2 * nv) if len(gains) else None,
        ),
    )


class Mpc:
    """A ControlService.Mpc stream (Client.mpc): the problem stated once and re-solved at each
    measured state, warm-started from the last solution shifted by the knots elapsed.

    Client.mpc sends the problem and waits for its solution (`first`); each tick() sends a
    measured state and its time and returns the MpcStep the server answers: by default after one
    FDDP iteration (a real-time iteration). A tick may also replace the problem (the same model,
    knots, dt and controls: a contact schedule moved on, new footholds) or update the references
    and weights of named cost terms. A tick that fails raises Error, and the stream goes on with
    the problem and solution it had.

    The deadline (the client's timeout, or the stream's own) bounds the whole stream; the
    client's token and TLS go with it. One thread uses a stream at a time.

    Example:
        with client.mpc(problem) as mpc:
            u = mpc.first.u0
            for k in range(1, 100):
                q, v = simulate_one_step(q, v, u)
                u = mpc.tick(q, v, time=k * dt).u0
    """

    def __init__(
        self,
        rpc: grpc.StreamStreamMultiCallable,
        problem: control_pb2.SolveRequest,
        nv: int,
        timeout: Optional[float],
        metadata: Any,
        *,
        time: float,
        iterations: Optional[int],
        max_seconds: float,
        plan: bool,
    ) -> None:
        self._nv = nv
        self._messages = OutgoingMessages()
        self._sequence = 0
        self._closed = False
        self._call = rpc(iter(self._messages), timeout=timeout, metadata=metadata)
        self._messages.call = self._call
        start = control_pb2.MpcRequest(time=time, max_seconds=max_seconds, plan=plan)
        start.problem.CopyFrom(problem)
        if iterations is not None:
            start.iterations = iterations
        try:
            self.first: MpcStep = self._exchange(start)
        except BaseException:
            self.cancel()
            raise

    def _exchange(self, request: control_pb2.MpcRequest) -> MpcStep:
        if self._closed:
            raise ValueError("tick: the stream is closed")
        self._sequence += 1
        request.sequence = self._sequence
        self._messages.put(request.SerializeToString())
        try:
            response = next(self._call)
        except grpc.RpcError as error:
            raise Error(error.code(), error.details() or "", _METHOD) from None
        except StopIteration:
            raise Error(grpc.StatusCode.UNKNOWN, "the stream ended without an answer", _METHOD)
        if response.status.code != 0:
            code = _STATUS_CODES.get(response.status.code, grpc.StatusCode.UNKNOWN)
            raise Error(code, response.status.message, _METHOD)
        return _step_of(response, self._nv)

    def tick(
        self,
        q: npt.ArrayLike,
        v: npt.ArrayLike,
        time: float,
        *,
        problem: Optional[Any] = None,
        updates: Sequence[control_pb2.TermUpdate] = (),
        iterations: Optional[int] = None,
        max_seconds: float = 0.0,
        plan: bool = False,
    ) -> MpcStep:
        """Re-solves from the measured state (q, v) at `time` (seconds, the clock of the stream's
        first message, not before the last tick's).

        Args:
            q, v: the measured state, (nq,) and (nv,).
            time: its time; the last solution is shifted by round((time - last) / dt) knots.
            problem: an OptimalControlProblem (or SolveRequest) replacing the stream's: the same
                model, knots, dt and controls, without a guess; solved with its own solver
                settings' iterations unless `iterations` is given.
            updates: term_update()s of the references and weights of named cost terms.
            iterations: FDDP iterations for this tick; None: 1 (a new problem: its own).
            max_seconds: this tick's time budget, 0: none; the answer is then the best iterate.
            plan: also return the whole plan in the step's solution.

        Raises:
            Error: INVALID_ARGUMENT naming the field (e.g. "time", "updates[0].name"); the stream
                goes on. A stream that ended raises its status (CANCELLED, UNAVAILABLE, ...).
        """
        request = control_pb2.MpcRequest(
            time=time, max_seconds=max_seconds, plan=plan, updates=list(updates)
        )
        request.q.extend(np.asarray(q, dtype=np.float64).ravel().tolist())
        request.v.extend(np.asarray(v, dtype=np.float64).ravel().tolist())
        if problem is not None:
            request.problem.CopyFrom(
                problem.to_request() if hasattr(problem, "to_request") else problem
            )
        if iterations is not None:
            request.iterations = iterations
        return self._exchange(request)

    def close(self) -> None:
        """Ends the stream: the server answers OK once the last tick was answered."""
        if not self._closed:
            self._closed = True
            self._messages.end()
            try:
                for _ in self._call:
                    pass
            except grpc.RpcError as error:
                raise Error(error.code(), error.details() or "", _METHOD) from None

    def cancel(self) -> None:
        """Ends the stream now."""
        self._closed = True
        self._messages.end()
        self._call.cancel()

    def __enter__(self) -> Mpc:
        return self

    def __exit__(self, exc_type: Any, *exc_info: object) -> None:
        """On an exception, cancels the stream; otherwise closes it."""
        if exc_type is not None:
            self.cancel()
        else:
            self.close()
