"""What the client's methods return: numpy arrays shaped per state, named."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Optional

import numpy as np
import numpy.typing as npt

from torqued.v1 import control_pb2, model_pb2

Array = npt.NDArray[np.float64]


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


class KnotValues(NamedTuple):
    """What a scheduled call (phases), or one with a friction cone, gives at each knot, whose sizes
    change with the knot's phase: lists of K arrays, one per knot (Rollout gives one KnotValues
    per rollout in a list, or one for a 1-D x0).

    Attributes:
        multipliers: lambda at each knot, (rows_k,), laid out as phase_rows says; empty lists when
            the call returns no lambda.
        dmultipliers_dq, dmultipliers_dv, dmultipliers_dtau: linearize with
            continuous_derivatives: its derivatives, (rows_k, nv); else empty lists.
        impulses: the touchdown knots' impulses, {knot: (rows_k,)}.
        friction_cones: with a friction cone, each contact's residuals, (contacts_k, 1 + faces),
            each >= 0 inside the cone: mu f_n - |f_t|, then the faces of the linearized cone.
        dfriction_cones_dx, dfriction_cones_du: their derivatives along x and u,
            (contacts_k, 1 + faces, 2 nv) and (contacts_k, 1 + faces, nu).
        phase_rows: each phase's rows: the model's loop closures, then its contacts.
    """

    multipliers: Any
    dmultipliers_dq: Any
    dmultipliers_dv: Any
    dmultipliers_dtau: Any
    impulses: Any
    friction_cones: Any
    dfriction_cones_dx: Any
    dfriction_cones_du: Any
    phase_rows: list[list[model_pb2.ConstraintRows]]


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
        knots: with phases or a friction cone, the values per knot (KnotValues); the arrays of
            lambda above are then None with phases.
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
    knots: Optional[KnotValues] = None


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
        knots: with phases or a friction cone, the values per step (KnotValues, the cones'
            derivatives with jacobians); multipliers is then None with phases.
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
    knots: Any = None


class SolverIteration(NamedTuple):
    """One FDDP iteration, as Crocoddyl's verbose callback prints it.

    Attributes:
        cost: the total cost after the iteration's step.
        stop: the stopping criterion |d1 + d2/2|.
        step: the step length alpha of the last step tried.
        regularization: mu after the iteration.
        gaps: the largest gap at the iteration's start (infinity norm).
    """

    cost: float
    stop: float
    step: float
    regularization: float
    gaps: float


@dataclasses.dataclass(frozen=True)
class Solution:
    """The answer of an optimal-control solve over T running knots.

    Attributes:
        q, v: the states x_0 ... x_T, (T + 1, nq) and (T + 1, nv).
        u: the controls u_0 ... u_{T-1}, (T, nu).
        feedback: with feedback=True, the gains K_t, (T, nu, 2 nv), so that
            u_t(x) = u_t + K_t (x - x_t) (x - x_t the tangent difference, dq then dv), the sign
            Client.rollout takes them with (minus Crocoddyl's K); else None.
        stop_reason: "converged", "iteration_limit", "regularization_limit" or "time_budget".
        iterations: the iterations done, in order.
        cost: the total cost of the solution.
        cost_terms: each term's part, by name, in the problem's order (running terms, then
            terminal ones); a running term's is summed over its knots, times dt.
        max_gap: the largest remaining gap between a step's end and the next state (0 when
            feasible).
        feasible: whether the states are the rollout of the controls (no gaps).
        solve_seconds: the server's compute time for the solve.
    """

    q: Array
    v: Array
    u: Array
    feedback: Optional[Array]
    stop_reason: str
    iterations: list[SolverIteration]
    cost: float
    cost_terms: dict[str, float]
    max_gap: float
    feasible: bool
    solve_seconds: float


def solution_from(
    response: Any, q: Array, v: Array, u: Array, feedback: Optional[Array]
) -> Solution:
    """The Solution of a SolveResponse: its arrays, shaped, and its other fields."""
    reason = control_pb2.StopReason.Name(response.stop_reason)
    return Solution(
        q=q,
        v=v,
        u=u,
        feedback=feedback,
        stop_reason=reason[len("STOP_REASON_") :].lower(),
        iterations=[
            SolverIteration(i.cost, i.stop, i.step, i.regularization, i.gaps)
            for i in response.iterations
        ],
        cost=response.cost,
        cost_terms={term.name: term.value for term in response.cost_terms},
        max_gap=response.max_gap,
        feasible=response.feasible,
        solve_seconds=response.solve_seconds,
    )
