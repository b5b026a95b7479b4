"""Activations of optimal-control cost terms: the scalar a(r) a term takes of its residual r of n
values (Crocoddyl's ActivationModels; control.proto's ActivationType gives each formula).

    torqued.activations.weighted_quadratic([0, 0, 0, 100, 100, 100] + [1] * 30)

The numbers are sent as given: their sizes, signs and finiteness are the server's to check, and
it answers INVALID_ARGUMENT naming the cost term's field.
"""

from __future__ import annotations

from typing import Optional

import numpy.typing as npt

from torqued._control import doubles
from torqued.v1 import control_pb2

__all__ = [
    "quadratic",
    "quadratic_barrier",
    "smooth_1_norm",
    "weighted_quadratic",
    "weighted_quadratic_barrier",
]


def quadratic() -> control_pb2.Activation:
    """a = 1/2 |r|^2 (a cost term's default)."""
    return control_pb2.Activation(type=control_pb2.ACTIVATION_TYPE_QUADRATIC)


def weighted_quadratic(weights: npt.ArrayLike) -> control_pb2.Activation:
    """a = 1/2 sum_i w_i r_i^2, n weights >= 0."""
    return control_pb2.Activation(
        type=control_pb2.ACTIVATION_TYPE_WEIGHTED_QUADRATIC, weights=doubles(weights)
    )


def quadratic_barrier(
    lower: Optional[npt.ArrayLike] = None, upper: Optional[npt.ArrayLike] = None
) -> control_pb2.Activation:
    """a = 1/2 |min(r - lower, 0)|^2 + 1/2 |max(r - upper, 0)|^2: zero inside the bounds, n values
    each (+-inf allowed), lower <= upper. None (both): a joint_limits residual's, the model's
    limits."""
    return control_pb2.Activation(
        type=control_pb2.ACTIVATION_TYPE_QUADRATIC_BARRIER,
        lower=doubles(lower),
        upper=doubles(upper),
    )


def weighted_quadratic_barrier(
    weights: npt.ArrayLike,
    lower: Optional[npt.ArrayLike] = None,
    upper: Optional[npt.ArrayLike] = None,
) -> control_pb2.Activation:
    """The quadratic barrier with each value's square weighted by w_i >= 0."""
    return control_pb2.Activation(
        type=control_pb2.ACTIVATION_TYPE_WEIGHTED_QUADRATIC_BARRIER,
        weights=doubles(weights),
        lower=doubles(lower),
        upper=doubles(upper),
    )


def smooth_1_norm(eps: Optional[float] = None) -> control_pb2.Activation:
    """a = sum_i sqrt(eps + r_i^2), eps > 0; None: the server's default, 1."""
    activation = control_pb2.Activation(type=control_pb2.ACTIVATION_TYPE_SMOOTH_1_NORM)
    if eps is not None:
        activation.smoothing = eps
    return activation
