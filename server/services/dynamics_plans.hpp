// What the plans of the batched dynamics RPCs read and describe. A plan, one per row of
// dynamics_rpcs.hpp (which declares it), checks the request's fields against its model, sizes its
// response (reserving its memory) and describes the work on its states; dynamics_plans.cpp and
// contact_plans.cpp define them.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "server/base/config.hpp"
#include "server/base/memory_budget.hpp"
#include "server/compute/algorithms.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/compute/constraint_anchors.hpp"
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
  double max_constraint_residual;
  int max_contacts;
  int max_kinematics_frames;
  int max_solver_iterations;
  int max_simulation_steps;
  int max_session_queued;
  int max_phases;
  int max_ocp_knots;
  int max_cost_terms;
  int max_ocp_iterations;
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
  Algorithm algorithm;
  ChunkKernel kernel;
  std::int64_t cost = 1;
};

// What a state's derivatives cost in those units, measured against RNEA on the same model
// (Release, one thread; ur5, solo12 and talos_reduced): the dynamics' first-order derivatives
// (Derivatives, an Euler step's Fx and Fu) 4-14 calls, an RK4 step's Jacobians 39-183 (its four
// stages' derivatives, chained by dense products). Weighed as one call, a 100-knot Linearize of
// talos_reduced (2.3 ms) stayed below --split-min-states and ran on one worker.
inline constexpr std::int64_t kDerivativesCost = 8;
inline constexpr std::int64_t kRungeKuttaDerivativesCost = 64;

// The checks of a step's fields that Linearize, Rollout and ControlService.Solve share.

// The DOFs the controls drive, in the controls' order (Actuation), or INVALID_ARGUMENT naming
// the field that does not fit the model.
grpc::Status actuated_dofs(const Model& m, const v1::Actuation& actuation, std::vector<int>& dofs);

grpc::Status check_gains(const v1::BaumgarteGains& gains);
// A request's gains in engine form, with the constrained solves' residual judged against
// --max-constraint-residual.
BaumgarteGains engine_gains(const Planning& planning, const v1::BaumgarteGains& gains);

// One phase of a request's schedule (`field`: "phases[i]"), after `previous` (null for the first)
// and before knot `horizon`, its constraint rows checked against the workspace of `algorithm`.
grpc::Status plan_phase(const Planning& planning, const RegisteredModelPtr& entry,
                        const v1::ContactPhase& in, const std::string& field,
                        const CallPhase* previous, int horizon, const Algorithm& algorithm,
                        CallPhase& out);

}  // namespace torqued::server
