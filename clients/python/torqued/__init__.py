"""Python client for torqued, the rigid-body dynamics service.

    import torqued
    client = torqued.Client("localhost:50051")
    tau = client.inverse_dynamics(model_id, q, v, a)   # numpy (batch, nv)

    problem = torqued.OptimalControlProblem(model_id, q0, v0, knots=50, dt=0.02)
    problem.add_terminal_cost("reach", torqued.residuals.frame_translation("tool0", target))
    solution = client.solve(problem)                    # solution.q (51, nq), solution.u (50, nu)

The generated messages and stubs are in torqued.v1 (model_pb2, dynamics_pb2, control_pb2 and
*_pb2_grpc).
"""

from torqued.client import *  # noqa: F401,F403 (the names of torqued.client.__all__)
from torqued.client import __all__
