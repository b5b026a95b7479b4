"""Helpers shared by the tests: seeded states and the comparison tolerance."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from torqued.v1 import model_pb2

REPOSITORY = Path(
    os.environ.get(
        "TORQUED_MODEL_REPOSITORY", Path(__file__).resolve().parents[3] / "deploy" / "models"
    )
)

# A planar two-link arm in the xy plane (joints about z), as an explicit spec: the same robot the
# dynamics tests check against the closed-form equations of motion.
PLANAR_ARM_SPEC = {
    "links": [
        {"name": "base"},
        {
            "name": "upper",
            "inertial": {
                "mass": 2.0,
                "origin": {"xyz": {"x": 0.3}},
                "inertia": {"ixx": 0.01, "iyy": 0.05, "izz": 0.05},
            },
        },
        {
            "name": "fore",
            "inertial": {
                "mass": 1.5,
                "origin": {"xyz": {"x": 0.25}},
                "inertia": {"ixx": 0.01, "iyy": 0.03, "izz": 0.03},
            },
        },
    ],
    "joints": [
        {
            "name": "shoulder",
            "type": "JOINT_TYPE_REVOLUTE",
            "parent_link": "base",
            "child_link": "upper",
            "axis": {"z": 1.0},
        },
        {
            "name": "elbow",
            "type": "JOINT_TYPE_REVOLUTE",
            "parent_link": "upper",
            "child_link": "fore",
            "origin": {"xyz": {"x": 0.7}},
            "axis": {"z": 1.0},
        },
    ],
}

# The same arm as a standard DH table: DH frame i sits at the far end of link i (a_i along x),
# so the centres of mass, given in DH frame i, are (c_i - a_i, 0, 0).
PLANAR_ARM_DH = {
    "convention": "DH_CONVENTION_STANDARD",
    "links": [
        {
            "type": "JOINT_TYPE_REVOLUTE",
            "a": 0.7,
            "mass": 2.0,
            "com": {"x": 0.3 - 0.7},
            "inertia": {"ixx": 0.01, "iyy": 0.05, "izz": 0.05},
        },
        {
            "type": "JOINT_TYPE_REVOLUTE",
            "a": 0.5,
            "mass": 1.5,
            "com": {"x": 0.25 - 0.5},
            "inertia": {"ixx": 0.01, "iyy": 0.03, "izz": 0.03},
        },
    ],
}

# Gravity in the arm's plane, so that it loads both joints.
PLANAR_GRAVITY = (0.0, -9.81, 0.0)


def random_states(
    model: model_pb2.Model, count: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded (q, v, a) batches in [-1, 1], with unit quaternions where the layout has them."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.0, 1.0, (count, model.nq))
    for joint in model.joints:
        offset = {
            model_pb2.JOINT_TYPE_SPHERICAL: joint.idx_q,
            model_pb2.JOINT_TYPE_FREE_FLYER: joint.idx_q + 3,
        }.get(joint.type)
        if offset is not None:
            quaternion = rng.normal(size=(count, 4))
            q[:, offset : offset + 4] = quaternion / np.linalg.norm(quaternion, axis=1)[:, None]
    return q, rng.uniform(-1.0, 1.0, (count, model.nv)), rng.uniform(-1.0, 1.0, (count, model.nv))


def assert_close(actual: np.ndarray, expected: np.ndarray, rel: float = 1e-9) -> None:
    """Equal shapes and |actual - expected| <= rel * max(1, max |expected|): the project's 1e-9
    relative bar, scaled by the array's magnitude so entries that cancel to ~0 do not count."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=0.0, atol=rel * scale)
