// ControlService.Solve's work: a planned optimal-control problem (engine/optimal_control's
// MultibodyProblem) solved by FDDP on an executor's worker, its knots' derivatives spread over
// the free workers (knot_parallel.hpp), and the answer written into the response.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/optimal_control/fddp.hpp"
#include "engine/optimal_control/multibody_problem.hpp"
#include "server/compute/executor.hpp"
#include "server/compute/workspace_pool.hpp"
#include "server/models/served_models.hpp"
#include "torqued/v1/control.pb.h"

namespace torqued::server {

// A Solve request as its plan read it: the engine's problem in parts, the solver's settings and
// guess, and what the answer includes.
struct PlannedSolve {
  RegisteredModelPtr entry;
  Eigen::VectorXd x0;
  MultibodyDynamics dynamics;
  // knot_models[t] indexes `models` for running knot t; models[terminal_model] is the terminal
  // knot's.
  std::vector<KnotModel> models;
  std::vector<int> knot_models;
  int terminal_model = 0;
  // The request's cost terms in its order (running, then terminal), and for each knot model the
  // term each of its costs is.
  std::vector<std::string> term_names;
  std::vector<std::vector<int>> terms_of_model;
  FddpSettings settings;
  // A warm start's guess (empty for a cold one), and FDDP's is_feasible.
  std::vector<Eigen::VectorXd> xs, us;
  bool feasible = false;
  bool feedback = false;
  double max_seconds = 0.0;  // 0: none
};

// A solve whose answer is not finite: finite inputs within their ranges (a joint angle of 1e161,
// a weight of 1e300) overflow its costs or dynamics. FAILED_PRECONDITION in the server, never an
// OK answer holding inf or NaN.
class SolveOverflow : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// When a solve must end: `call_should_stop` says so for the call (its client gone, the server's
// bound); the time budget runs out at `budget_end`, and before `answer_by` the answer must be
// complete (the deadline, less the time to send it).
struct SolveLimit {
  bool (*call_should_stop)(const void* state) = nullptr;
  const void* call = nullptr;
  std::chrono::steady_clock::time_point budget_end = std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::time_point answer_by = std::chrono::steady_clock::time_point::max();
};

// The heap bytes of a solver for `knots` knots and `nu` controls on `threads` workers (FDDP's
// trajectories, derivatives, value function and gains per knot, each an allocation of its own,
// and each worker's scratch): what a Solve reserves, and what the solver holds while it waits in
// its model's workspace for the next solve.
std::size_t solve_bytes(const Model& model, int knots, int nu, int threads);

// The workspace a solve worked in, its solver in it. solve() leaves it here rather than giving
// it back, so that the caller gives it back once the answer is on its way: when the pool does not
// keep it, freeing a 50-knot arm's solver takes some 50 us, which the call's latency would
// otherwise include.
using SolveRemains = std::shared_ptr<const void>;

// Solves `plan` into `response` on a task of `executor` (null: the calling thread only) with at
// most `threads` workers, its solver that of a workspace of the plan's model from `workspaces`
// (the last solve's, rebound to the plan, when one holds it). A time budget that runs out
// answers the best iterate so far (STOP_REASON_TIME_BUDGET). Throws Interrupted when the call
// itself must stop, SolveOverflow, WorkspaceLimitError, and what the engine throws
// (SingularSystemError when a knot's dynamics is singular at the guess).
void solve(const PlannedSolve& plan, WorkspacePool& workspaces, Executor* executor, int threads,
           const SolveLimit& limit, v1::SolveResponse& response, SolveRemains& remains);

}  // namespace torqued::server
