"""torqued.Client: the torqued gRPC API with numpy arrays in and out.

Shapes. A call takes states as arrays shaped (batch, nq) for q and (batch, nv) for v, a and tau,
and returns (batch, nv) vectors and (batch, nv, nv) matrices. A single state may be given as 1-D
arrays; the results then drop the batch axis too. Arrays are sent as float64, row-major, exactly
as the proto describes (proto/torqued/v1/dynamics.proto documents every field).

Security. TLS takes the PEM bytes grpc.ssl_channel_credentials takes (root_certificates,
certificate_chain, private_key), or any grpc.ChannelCredentials; `token` is sent with every call
as metadata "authorization: Bearer <token>".

Reliability. Every call has a deadline (the client's `timeout`, or the call's own) covering its
retries: a call answered UNAVAILABLE (or CANCELLED, by a server shutting down) is retried with
exponential backoff, up to `retries` times.
A model registered through this client is remembered: when a call on its id answers NOT_FOUND
(another replica, or a server that lost it), the client registers it again and retries.

Sessions. Client.session() opens a DynamicsService.Session stream for control loops: requests of
any DynamicsService method, sent in turn and answered in order over one call (see Session).

A library. close() (or a `with` block) ends the channel; a client never closed is closed when it
is collected or at the interpreter's exit, so a script that forgets it still exits. The process's
allocator is left as it is unless keep_freed_memory=True asks for the server's mallopt settings.

Optimal control. Client.solve solves an OptimalControlProblem on the server (ControlService):
the problem is built as Crocoddyl builds one, from the cost terms of torqued.residuals and
torqued.activations and the contacts of torqued.contact (see torqued/_control.py). Client.mpc
opens a ControlService.Mpc stream that re-solves the problem at each measured state (see Mpc).

Modules. The methods live by service: _connection.py (the channel, retries, re-registration,
health, sessions, Echo), _models.py (ModelService), _dynamics.py (the batched dynamics),
_trajectory.py (Linearize and Rollout, with _euler_step_jacobians.py) and _control.py
(ControlService's Solve and the problem it takes, with residuals.py and activations.py);
results.py holds what they return, _conversions.py the arguments' conversions, _wire.py the
packed doubles on the wire.
"""

from __future__ import annotations

from torqued import activations, residuals
from torqued._control import ControlMethods, OptimalControlProblem, contact
from torqued._dynamics import DynamicsMethods
from torqued._models import ModelMethods
from torqued._trajectory import TrajectoryMethods
from torqued.errors import Error
from torqued.results import (
    AccelerationsAndForces,
    Centroidal,
    ConstrainedDerivatives,
    ConstrainedDynamics,
    ContactSolution,
    Derivatives,
    Kinematics,
    Linearization,
    Rollouts,
    Simulation,
    Solution,
    SolverIteration,
)
from torqued.mpc import Mpc, MpcStep, term_update
from torqued.session import Session, SessionReply

# What `import torqued` exports: the client, its errors and sessions, the results of its
# methods, and what an optimal-control problem is built from.
__all__ = [
    "AccelerationsAndForces",
    "Centroidal",
    "Client",
    "ConstrainedDerivatives",
    "ConstrainedDynamics",
    "ContactSolution",
    "Derivatives",
    "Error",
    "Kinematics",
    "Linearization",
    "Mpc",
    "MpcStep",
    "OptimalControlProblem",
    "Rollouts",
    "Session",
    "SessionReply",
    "Simulation",
    "Solution",
    "SolverIteration",
    "activations",
    "contact",
    "residuals",
    "term_update",
]


class Client(ModelMethods, DynamicsMethods, TrajectoryMethods, ControlMethods):
    """A connection to torqued (one server, or several behind a DNS name or a proxy).

    The methods are grouped by module: torqued/_connection.py (the channel, retries, health,
    sessions, echo), _models.py (ModelService), _dynamics.py (the batched dynamics),
    _trajectory.py (Linearize and Rollout) and _control.py (Solve).

    Example:
        with torqued.Client("localhost:50051") as client:
            arm = next(m for m in client.list_models() if m.name == "stanford_arm")
            tau = client.gravity(arm.id, [0.3, -0.6, 0.5, 0.8, -0.4, 0.2])
    """
