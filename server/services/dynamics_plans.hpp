// The plans of the batched dynamics RPCs: one function per request type, which checks the
// request's fields against its model, sizes its response (reserving its memory) and describes the
// work on its states. A plan is what a new dynamics RPC adds to the server beside its row in
// dynamics_rpcs.hpp; the handler, the Session dispatch and the metrics follow from the row.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>

#include "server/base/config.hpp"
#include "server/base/memory_budget.hpp"
#include "server/compute/algorithms.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/models/served_models.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

// The per-call limits, from the flags (config.hpp documents each; every one is named by its flag
// in its error).
struct RequestLimits {
  int max_batch_states;
  std::int64_t max_message_bytes;
  std::int64_t max_workspace_bytes;
  int max_constraint_rows;
  int max_contacts;
  int max_kinematics_frames;
  int max_solver_iterations;
  int max_simulation_steps;
  int max_session_queued;
};

RequestLimits request_limits(const Config& config);

// What a plan reads beside the request: the limits, and the memory budget its response is
// reserved from.
struct Planning {
  const RequestLimits& limits;
  MemoryBudget& budget;

  // A response of `values` numbers: RESOURCE_EXHAUSTED past --max-message-bytes, or when the
  // response and its encoding, both held until the call ends, do not fit the memory budget; else
  // reserved in `memory`.
  grpc::Status reserve_response(std::int64_t values, Reservation& memory) const;
};

// The work a plan describes. `cost` is the work of one state in units of one dynamics call (a
// Simulate trajectory costs its steps), for the runner's inline and split decisions.
struct PlannedWork {
  Algorithm algorithm = Algorithm::kRnea;
  ChunkKernel kernel;
  std::int64_t cost = 1;
};

// The plans, one per batched request type: `entry` is the request's model, `n` its states
// (batch_size and q already checked against it).
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::InverseDynamicsRequest* request, v1::InverseDynamicsResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::ForwardDynamicsRequest* request, v1::ForwardDynamicsResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::MassMatrixRequest* request, v1::MassMatrixResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::NonlinearEffectsRequest* request,
                  v1::NonlinearEffectsResponse* response, PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::GravityRequest* request, v1::GravityResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::KinematicsRequest* request, v1::KinematicsResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::HybridDynamicsRequest* request, v1::HybridDynamicsResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::FloatingBaseInverseDynamicsRequest* request,
                  v1::FloatingBaseInverseDynamicsResponse* response, PlannedWork& job,
                  Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::DerivativesRequest* request, v1::DerivativesResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::CoriolisMatrixRequest* request, v1::CoriolisMatrixResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::CentroidalRequest* request, v1::CentroidalResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::ConstrainedDynamicsRequest* request,
                  v1::ConstrainedDynamicsResponse* response, PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::ContactDynamicsRequest* request, v1::ContactDynamicsResponse* response,
                  PlannedWork& job, Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::ImpactRequest* request, v1::ImpactResponse* response, PlannedWork& job,
                  Reservation& memory);
grpc::Status plan(const Planning& planning, const RegisteredModelPtr& entry, int n,
                  const v1::SimulateRequest* request, v1::SimulateResponse* response,
                  PlannedWork& job, Reservation& memory);

}  // namespace torqued::server
