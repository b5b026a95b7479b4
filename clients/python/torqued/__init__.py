"""Python client for torqued, the rigid-body dynamics service.

    import torqued
    client = torqued.Client("localhost:50051")
    tau = client.inverse_dynamics(model_id, q, v, a)   # numpy (batch, nv)

The generated messages and stubs are in torqued.v1 (model_pb2, dynamics_pb2 and *_pb2_grpc).
"""

from torqued.client import (
    AccelerationsAndForces,
    Centroidal,
    Client,
    ConstrainedDynamics,
    ContactSolution,
    Derivatives,
    Error,
    Kinematics,
    Session,
    SessionReply,
    Simulation,
)

__all__ = [
    "AccelerationsAndForces",
    "Centroidal",
    "Client",
    "ConstrainedDynamics",
    "ContactSolution",
    "Derivatives",
    "Error",
    "Kinematics",
    "Session",
    "SessionReply",
    "Simulation",
]
