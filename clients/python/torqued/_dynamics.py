"""DynamicsService's batched dynamics: one state per row in, one per row out."""

from __future__ import annotations

from typing import Literal, Optional, Sequence, overload

import numpy as np
import numpy.typing as npt

from torqued._connection import Connection
from torqued._conversions import (
    Batch,
    ConstrainedDynamicsMode,
    Constraint,
    ContactCandidate,
    ForwardDynamicsAlgorithm,
    Integrator,
    InverseDynamicsAlgorithm,
    MassMatrixAlgorithm,
    PointContact,
    ReferenceFrame,
    contact_solution,
    enum_value,
    message,
    solver_options,
)
from torqued.results import (
    AccelerationsAndForces,
    Array,
    Centroidal,
    ConstrainedDerivatives,
    ConstrainedDynamics,
    ContactSolution,
    Derivatives,
    Kinematics,
    Simulation,
)
from torqued.v1 import dynamics_pb2


class DynamicsMethods(Connection):
    """Client's batched dynamics methods (states in rows, see torqued.client)."""

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
        batch = Batch(q)
        response = self._compute(
            "InverseDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            a=batch.rows("a", a),
            external_forces=batch.wrenches(external_forces),
            algorithm=enum_value(
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
        batch = Batch(q)
        response = self._compute(
            "ForwardDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            tau=batch.rows("tau", tau),
            external_forces=batch.wrenches(external_forces),
            algorithm=enum_value(
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
        batch = Batch(q)
        response = self._compute(
            "MassMatrix",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            inverse=inverse,
            algorithm=enum_value(dynamics_pb2.MassMatrixAlgorithm, "MASS_MATRIX_ALGORITHM_", algorithm),
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
        batch = Batch(q)
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
        batch = Batch(q)
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
        batch = Batch(q)
        response = self._compute(
            "Kinematics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=np.empty(0) if v is None else batch.rows("v", v),
            frames=list(frames),
            reference=enum_value(dynamics_pb2.ReferenceFrame, "REFERENCE_FRAME_", reference),
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
        batch = Batch(q)
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
        batch = Batch(q)
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
        batch = Batch(q)
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
        batch = Batch(q)
        response = self._compute(
            "Derivatives",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            tau=batch.rows("tau", tau),
            of=dynamics_pb2.DERIVATIVES_OF_CONSTRAINED_DYNAMICS,
            constraints=[message(dynamics_pb2.Constraint, c) for c in constraints],
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
        batch = Batch(q)
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
        batch = Batch(q)
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
        batch = Batch(q)
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
            mode=enum_value(dynamics_pb2.ConstrainedDynamicsMode, "CONSTRAINED_DYNAMICS_MODE_", mode),
            tau=batch.rows("tau", tau),
            a=batch.rows("a", a) if inverse else np.empty(0),
            inputs=inputs,
            constraints=[message(dynamics_pb2.Constraint, c) for c in constraints],
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
        batch = Batch(q)
        response = self._compute(
            "ContactDynamics",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            tau=batch.rows("tau", tau),
            contacts=[message(dynamics_pb2.PointContact, c) for c in contacts],
            solver=solver_options(tolerance, max_iterations, slip_velocity),
        )
        return contact_solution(batch, response, response.a, response.forces)

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
        batch = Batch(q)
        response = self._compute(
            "Impact",
            model_id,
            timeout,
            batch_size=batch.size,
            q=batch.q,
            v=batch.rows("v", v),
            contacts=[message(dynamics_pb2.PointContact, c) for c in contacts],
            restitution=restitution,
            solver=solver_options(tolerance, max_iterations, None),
        )
        return contact_solution(batch, response, response.v, response.impulses)

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
        batch = Batch(q)
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
            integrator=enum_value(dynamics_pb2.Integrator, "INTEGRATOR_", integrator),
            tau=torques,
            ground=dynamics_pb2.GroundPlane(
                height=ground_height, friction=friction, restitution=restitution
            ),
            candidates=[message(dynamics_pb2.ContactCandidate, c) for c in candidates],
            solver=solver_options(tolerance, max_iterations, None),
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
