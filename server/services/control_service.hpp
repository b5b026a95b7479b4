// torqued.v1.ControlService on the callback API: Solve, a robot's optimal-control problem solved
// on the server (control_plan.hpp reads and checks it, control_solver.hpp solves it), and Mpc, the
// same problem re-solved over a stream (mpc_stream.hpp). A solve runs as one task of the
// executor, in its client's turn, and spreads its knots over the free workers; when it would
// start at once, it is queued before the request is planned, and the worker's wake-up overlaps the
// plan (PendingInput in batch_runner.hpp). Its time budget and its deadline end it with the best
// iterate; its client going away, the server's --max-call-seconds or a drain end it with that
// status, between iterations or inside one (within milliseconds).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>

#include "server/base/memory_budget.hpp"
#include "server/base/rpc_methods.hpp"
#include "server/compute/control_solver.hpp"
#include "server/compute/executor.hpp"
#include "server/models/model_catalog.hpp"
#include "server/services/dynamics_plans.hpp"
#include "server/transport/access_tokens.hpp"
#include "torqued/v1/control.grpc.pb.h"

namespace torqued::server {

// The solver's label in the compute-time metrics: FDDP, or box-FDDP under control bounds.
inline constexpr Algorithm kFddp{"fddp", {}};
inline constexpr Algorithm kBoxFddp{"box_fddp", {}};

class MpcReactor;

class ControlService final : public v1::ControlService::Service {
 public:
  // Registers every method of the service; throws std::logic_error naming a method of its
  // descriptor that nothing serves.
  ControlService(const ModelCatalog& catalog, Executor& executor, WorkspacePool& workspaces,
                 Metrics& metrics, MemoryBudget& budget, const AccessControl& access,
                 const RequestLimits& limits, double max_call_seconds,
                 const std::atomic<bool>& ready);

  ~ControlService() override { std::lock_guard lock(streams_mutex_); }

  // The labels of the service's algorithms, for the metrics.
  static std::vector<std::string> algorithm_names();

  // Ends every open Mpc stream (UNAVAILABLE once the message being solved is answered) and
  // refuses new ones.
  void drain();

 private:
  friend class MpcReactor;

  // The registered model `id` (`field` names it in errors): NOT_FOUND, or UNAVAILABLE while the
  // server loads its models.
  grpc::Status find_model(const std::string& id, const std::string& field,
                          RegisteredModelPtr& entry) const;
  // Solves `plan` into `response` on the calling executor task, bounded by the call's deadline,
  // its client and the server's --max-call-seconds, and records its compute time, `planning`
  // (the time the request's checks and plan took) included; the solver's buffers are left in
  // `remains`, for the caller to free after answering. The status of a solve that cannot answer:
  // FAILED_PRECONDITION (singular dynamics, an answer that overflows), CANCELLED or
  // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (allocation, a workspace past its limits).
  grpc::Status solve_in_call(grpc::CallbackServerContext& context, const PlannedSolve& plan,
                             std::chrono::steady_clock::duration planning,
                             v1::SolveResponse& response, SolveRemains& remains);
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* open_mpc(
      grpc::CallbackServerContext* context);

  grpc::ServerUnaryReactor* serve_solve(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request_bytes,
                                        grpc::ByteBuffer* response_bytes);

  const ModelCatalog& catalog_;
  Executor& executor_;
  WorkspacePool& workspaces_;  // the models' solvers are kept in their workspaces
  Metrics& metrics_;
  MemoryBudget& budget_;
  const AccessControl& access_;
  const RequestLimits limits_;
  const Planning planning_{limits_, budget_};
  const double max_call_seconds_;
  const std::atomic<bool>& ready_;
  const MethodId solve_method_;
  const MethodId mpc_method_;
  // Open Mpc streams, ended by drain().
  std::mutex streams_mutex_;
  std::set<MpcReactor*> streams_;
  bool draining_ = false;
};

}  // namespace torqued::server
