"""Residuals of optimal-control cost terms: the vectors r(x, u) a term's activation weighs
(Crocoddyl's residual models; control.proto's ResidualType gives each formula and size).

    torqued.residuals.frame_translation("tool0", [0.6, 0.1, 0.5])
    torqued.residuals.state()            # x - (neutral configuration, at rest)

Frames are named by reference, as the other calls take them ("FL_foot", "body:base"). Rotations
are 3 x 3 matrices (columns: the frame's axes in world coordinates) or (roll, pitch, yaw) with
R = Rz(yaw) Ry(pitch) Rx(roll); a matrix becomes the angles here, and one that is not a rotation
is a ValueError. The references are sent as given: their sizes and finiteness are the server's to
check, and it answers INVALID_ARGUMENT naming the cost term's field.
"""

from __future__ import annotations

from typing import Literal, Optional

import numpy.typing as npt

from torqued._control import doubles, placement_message, vector3
from torqued._conversions import enum_value
from torqued.v1 import control_pb2, dynamics_pb2

__all__ = [
    "center_of_mass",
    "contact_force",
    "control",
    "control_gravity",
    "frame_placement",
    "frame_rotation",
    "frame_translation",
    "frame_velocity",
    "friction_cone",
    "joint_limits",
    "state",
]


def state(reference: Optional[npt.ArrayLike] = None) -> control_pb2.Residual:
    """x - x* (2 nv values, the tangent difference: dq then dv); reference x* = (q*, v*), nq + nv
    values; None: the neutral configuration at rest."""
    return control_pb2.Residual(type=control_pb2.RESIDUAL_TYPE_STATE, reference=doubles(reference))


def control(reference: Optional[npt.ArrayLike] = None) -> control_pb2.Residual:
    """u - u* (nu values); None: u* = 0."""
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_CONTROL, reference=doubles(reference)
    )


def control_gravity() -> control_pb2.Residual:
    """B u - g(q) (nv values): the joint forces beyond gravity compensation."""
    return control_pb2.Residual(type=control_pb2.RESIDUAL_TYPE_CONTROL_GRAVITY)


def frame_translation(frame: str, target: npt.ArrayLike) -> control_pb2.Residual:
    """p_F(q) - p* (3 values, world axes): the frame's origin from its target."""
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_FRAME_TRANSLATION, frame=frame, reference=doubles(target)
    )


def frame_placement(
    frame: str, translation: npt.ArrayLike, rotation: Optional[npt.ArrayLike] = None
) -> control_pb2.Residual:
    """Log(M*^-1 M_F(q)) (6 values, linear first): the frame's placement from the target M* at
    `translation` with `rotation` (None: the world's axes)."""
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_FRAME_PLACEMENT,
        frame=frame,
        placement=placement_message(translation, rotation, "frame_placement"),
    )


def frame_rotation(frame: str, rotation: npt.ArrayLike) -> control_pb2.Residual:
    """Log(R*^T R_F(q)) (3 values): the frame's orientation from the target R*."""
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_FRAME_ROTATION,
        frame=frame,
        placement=placement_message(None, rotation, "frame_rotation"),
    )


def frame_velocity(
    frame: str,
    target: Optional[npt.ArrayLike] = None,
    reference: Literal["local", "local_world_aligned"] = "local",
) -> control_pb2.Residual:
    """v_F(q, v) - v* (6 values, [linear; angular]), expressed as `reference` says; None: v* = 0."""
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_FRAME_VELOCITY,
        frame=frame,
        reference=doubles(target),
        velocity_frame=enum_value(dynamics_pb2.ReferenceFrame, "REFERENCE_FRAME_", reference),
    )


def center_of_mass(target: npt.ArrayLike) -> control_pb2.Residual:
    """c(q) - c* (3 values, world axes)."""
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_CENTER_OF_MASS, reference=doubles(target)
    )


def contact_force(frame: str, target: Optional[npt.ArrayLike] = None) -> control_pb2.Residual:
    """lambda - f*: the force (a point contact, 3 values) or wrench (a weld, 6) of the contact on
    `frame`, in that frame's axes; None: f* = 0. The contact must hold at every knot the term
    covers."""
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_CONTACT_FORCE, frame=frame, reference=doubles(target)
    )


def friction_cone(
    frame: str, mu: float, faces: int = 4, normal: Optional[npt.ArrayLike] = None
) -> control_pb2.Residual:
    """The linearized friction cone of the contact on `frame`: values >= 0 inside (their number
    as control.proto's RESIDUAL_TYPE_FRICTION_CONE states it), for a quadratic barrier with lower
    bounds 0. mu > 0; normal: the surface normal, world axes (None: +z)."""
    cone = dynamics_pb2.FrictionCone(friction=mu, faces=faces)
    if normal is not None:
        cone.normal.CopyFrom(vector3(normal, "friction_cone.normal"))
    return control_pb2.Residual(
        type=control_pb2.RESIDUAL_TYPE_FRICTION_CONE, frame=frame, cone=cone
    )


def joint_limits() -> control_pb2.Residual:
    """x - (neutral, 0) (2 nv values), for a (weighted) quadratic barrier: without bounds of its
    own, the barrier's are the model's position and velocity limits."""
    return control_pb2.Residual(type=control_pb2.RESIDUAL_TYPE_JOINT_LIMITS)
