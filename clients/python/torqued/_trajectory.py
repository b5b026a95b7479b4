"""DynamicsService's trajectory calls: Linearize (a horizon's Fx and Fu) and Rollout (shooting)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import numpy.typing as npt

from torqued._connection import Connection
from torqued._conversions import (
    Actuation,
    Batch,
    Cone,
    Constraint,
    Integrator,
    Phase,
    ReferenceFrame,
    actuation_message,
    cone_message,
    enum_value,
    message,
    phase_message,
)
from torqued._euler_step_jacobians import euler_step_jacobians
from torqued.results import Array, KnotValues, Linearization, Rollouts
from torqued.v1 import dynamics_pb2


def knot_values(
    response: Any, knots: int, nv: int, cone: Optional[dynamics_pb2.FrictionCone], rollout: int
) -> Optional[KnotValues]:
    """Rollout `rollout`'s (0 for Linearize) values per knot, as the answer's layout places them,
    or None when the call had neither phases nor a cone."""
    layout = response.layout
    if not layout.multipliers_at:
        return None
    nu = response.nu
    lambda_at = list(layout.multipliers_at)
    cones_at = list(layout.cones_at)
    cone_values = 1 + (cone.faces or 4) if cone is not None else 1

    def split(values: Any, offsets: list[int], width: int, *shape: int) -> list[Array]:
        if not len(values) or not offsets:
            return []
        flat = np.asarray(values, dtype=np.float64)
        start = rollout * offsets[-1] * width
        return [
            flat[start + offsets[k] * width : start + offsets[k + 1] * width].reshape(shape)
            for k in range(knots)
        ]

    impulses: dict[int, Array] = {}
    at = rollout * sum(lambda_at[k + 1] - lambda_at[k] for k in layout.touchdown_knots)
    for k in layout.touchdown_knots:
        rows = lambda_at[k + 1] - lambda_at[k]
        impulses[int(k)] = np.asarray(response.impulses[at : at + rows], dtype=np.float64)
        at += rows
    return KnotValues(
        multipliers=split(response.multipliers, lambda_at, 1, -1),
        dmultipliers_dq=split(getattr(response, "dmultipliers_dq", []), lambda_at, nv, -1, nv),
        dmultipliers_dv=split(getattr(response, "dmultipliers_dv", []), lambda_at, nv, -1, nv),
        dmultipliers_dtau=split(getattr(response, "dmultipliers_dtau", []), lambda_at, nv, -1, nv),
        impulses=impulses,
        friction_cones=split(response.friction_cones, cones_at, 1, -1, cone_values),
        dfriction_cones_dx=split(
            response.dfriction_cones_dx, cones_at, 2 * nv, -1, cone_values, 2 * nv
        ),
        dfriction_cones_du=split(response.dfriction_cones_du, cones_at, nu, -1, cone_values, nu),
        phase_rows=[list(p.rows) for p in layout.phases],
    )


class TrajectoryMethods(Connection):
    """Client's trajectory methods: Linearize and Rollout, with Fx and Fu assembled from the
    velocity rows for the Euler integrators (_euler_step_jacobians)."""

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
        phases: Sequence[Phase] = (),
        friction_cone: Optional[Cone] = None,
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
            phases: a contact schedule instead of constraints, e.g.
                [(0, four_feet), (10, diagonal), (14, four_feet, 0.0)]: each knot is held by
                its phase's contacts, a phase that adds a contact begins with its touchdown
                (the impact, plastic unless a restitution is given), and the answer's `knots`
                gives lambda, the impulses and the cones per knot.
            friction_cone: mu, or {"friction": mu, "faces": m, "normal": {...}}: also return each
                contact's friction-cone residuals and their derivatives (in `knots`).
            position_gain, velocity_gain: Baumgarte's K_p (1/s^2) and K_d (1/s) on the
                constraints; 0: held at the acceleration level, as Crocoddyl holds contacts.
        """
        batch = Batch(q)
        cone = cone_message(friction_cone)
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
            integrator=enum_value(dynamics_pb2.Integrator, "INTEGRATOR_", integrator),
            actuation=actuation_message(actuation),
            continuous_derivatives=continuous_derivatives,
            constraints=[message(dynamics_pb2.Constraint, c) for c in constraints],
            phases=[phase_message(p) for p in phases],
            friction_cone=cone,
            gains=dynamics_pb2.BaumgarteGains(position=position_gain, velocity=velocity_gain),
            jacobians=dynamics_pb2.STEP_JACOBIANS_VELOCITY_ROWS
            if velocity_rows
            else dynamics_pb2.STEP_JACOBIANS_DENSE,
        )
        nv = len(response.v_next) // batch.size
        nx = 2 * nv
        # With phases the rows change from knot to knot: lambda is in `knots` only.
        rows = 0 if phases else len(response.multipliers) // batch.size
        if velocity_rows:
            fx, fu = euler_step_jacobians(
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
            knots=knot_values(response, batch.size, nv, cone, 0),
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
        phases: Sequence[Phase] = (),
        friction_cone: Optional[Cone] = None,
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
            dt, integrator, actuation, constraints, phases, friction_cone, position_gain,
                velocity_gain: the step, as linearize takes it; every rollout crosses the same
                phases.
            q_nominal, v_nominal, feedback: the nominal trajectory, (K, nq) and (K, nv), and the
                gains K_k, (K, nu, 2 nv), shared by the rollouts; all three or none (open loop).
            jacobians: also return fx and fu of every step.
            frames: frame references (as kinematics takes them) whose placements are
                returned at every state.
            frame_jacobians: and their Jacobians, expressed as `reference` says.
        """
        batch = Batch(q0)
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
        cone = cone_message(friction_cone)

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
            integrator=enum_value(dynamics_pb2.Integrator, "INTEGRATOR_", integrator),
            actuation=actuation_message(actuation),
            constraints=[message(dynamics_pb2.Constraint, c) for c in constraints],
            phases=[phase_message(p) for p in phases],
            friction_cone=cone,
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
            reference=enum_value(dynamics_pb2.ReferenceFrame, "REFERENCE_FRAME_", reference),
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
            fx, fu = euler_step_jacobians(
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
            multipliers=None if phases else unpack(response.multipliers, knots, -1),
            frames=list(response.frames),
            frame_positions=unpack(response.frame_positions, states, count, 3),
            frame_rotations=unpack(response.frame_rotations, states, count, 3, 3),
            frame_jacobians=unpack(response.frame_jacobians, states, count, 6, nv),
            rows=list(response.rows),
            knots=None
            if not response.layout.multipliers_at
            else knot_values(response, knots, nv, cone, 0)
            if batch.single
            else [knot_values(response, knots, nv, cone, r) for r in range(batch.size)],
        )
