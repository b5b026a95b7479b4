"""Fx and Fu of an Euler step from the velocity rows the server answers
(STEP_JACOBIANS_VELOCITY_ROWS in proto/torqued/v1/dynamics.proto), the chain rule of
engine/algorithms/discrete_step.cpp: x+ = (q (+) dt w, v+), w = v+ (semi-implicit) or v
(explicit), so that dq+/dx = J_q [I 0] + dt J_w dw/dx, with J_q and J_w the Jacobians of the
configuration's integration (Pinocchio's dIntegrate) with respect to q and to the increment.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf.descriptor import Descriptor, MethodDescriptor

from torqued.results import Array

# The response fields an Euler step's Fx and Fu are assembled from (the client reads them once and
# never hands them out); a method carries them when its request chooses a StepJacobians layout.
ASSEMBLED_FROM = ("dv_next_dx", "dv_next_du", "integrate_dq", "integrate_dw")
_LAYOUT_ENUM = "torqued.v1.StepJacobians"


def chooses_step_jacobians(request: Descriptor) -> bool:
    """Whether a request has a field choosing the StepJacobians layout of its answer."""
    return any(f.enum_type and f.enum_type.full_name == _LAYOUT_ENUM for f in request.fields)


def assembled_from(method: MethodDescriptor) -> tuple[str, ...]:
    """The fields of `method`'s response that Fx and Fu are assembled from: ASSEMBLED_FROM for a
    method whose request chooses a StepJacobians layout (Linearize, Rollout), none otherwise."""
    return ASSEMBLED_FROM if chooses_step_jacobians(method.input_type) else ()


def euler_step_jacobians(
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
