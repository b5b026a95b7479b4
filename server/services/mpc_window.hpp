// The problem an Mpc stream holds and its last solution (control.proto's MpcRequest): each
// message read against them into the plan of its solve, and the solve's outcome kept for the next
// message. Without gRPC, threads or a network, so that a fuzzer drives it as the stream does.
#pragma once

#include <grpcpp/support/status.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/compute/control_solver.hpp"
#include "server/services/dynamics_plans.hpp"
#include "torqued/v1/control.pb.h"

namespace torqued::server {

class MpcWindow {
 public:
  // The registered model of an id (`field` names it in errors).
  using FindModel = std::function<grpc::Status(const std::string& id, const std::string& field,
                                               RegisteredModelPtr& entry)>;

  // Reads `request` against the held problem into plan(): the held plan, or a new one for a new
  // problem or updated terms (planned for at most `threads` workers), from the measured state and
  // warm-started from the last solution shifted by the knots elapsed. INVALID_ARGUMENT naming the
  // field, RESOURCE_EXHAUSTED naming the flag, NOT_FOUND or UNAVAILABLE (from `find_model`); the
  // held problem and solution stay as they were.
  grpc::Status prepare(const Planning& planning, const FindModel& find_model, int threads,
                       const v1::MpcRequest& request);
  // The plan prepare() made.
  const PlannedSolve& plan() const { return (replaced_ ? replaced_ : held_)->plan; }
  // After plan() was solved into `solution`: the answer's u₀, K₀ and shift into `response`, the
  // solution (and a new problem) held for the next message, and the plan left out of `solution`
  // unless `request` asked for it.
  void commit(const v1::MpcRequest& request, v1::SolveResponse& solution,
              v1::MpcResponse& response);

 private:
  struct Held {
    v1::SolveRequest problem;
    PlannedSolve plan;
    Reservation memory;  // the plan's solve and answer
    std::vector<Eigen::VectorXd> xs, us;
    double time = 0.0;
  };

  std::unique_ptr<Held> held_;      // null until a message states a problem
  std::unique_ptr<Held> replaced_;  // the message's new problem, until its solve succeeds
  int shift_ = 0;
};

}  // namespace torqued::server
