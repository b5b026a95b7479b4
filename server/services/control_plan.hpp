// The plan of ControlService.Solve: every field of a SolveRequest checked against its model and
// the server's limits (INVALID_ARGUMENT naming the field, RESOURCE_EXHAUSTED naming the flag),
// and the request read into the engine's problem (PlannedSolve), with the memory the solve (on
// `threads` workers at most) and its answer hold reserved in `memory`.
#pragma once

#include <grpcpp/support/status.h>

#include "server/compute/control_solver.hpp"
#include "server/services/dynamics_plans.hpp"
#include "torqued/v1/control.pb.h"

namespace torqued::server {

grpc::Status plan_solve(const Planning& planning, const RegisteredModelPtr& entry,
                        const v1::SolveRequest& request, int threads, PlannedSolve& out,
                        Reservation& memory);

}  // namespace torqued::server
