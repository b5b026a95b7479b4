// Running a call's work on the executor: a batch is split into chunks of at least
// `split_min_states` states (at most one per worker), every chunk checks cancellation and the
// deadline before it starts, and the last chunk to end completes the call. A full queue answers
// RESOURCE_EXHAUSTED at once.
#pragma once

#include <functional>

#include "server/call.hpp"
#include "server/executor.hpp"

namespace torqued::server {

// Computes states [begin, end) with the worker's context; may throw (SingularSystemError becomes
// FAILED_PRECONDITION, anything else INTERNAL).
using ChunkKernel = std::function<void(WorkerContext& worker, int begin, int end)>;

// Work that is not a batch (registration, deletion): returns the call's status.
using CallTask = std::function<grpc::Status()>;

class BatchRunner {
 public:
  BatchRunner(Executor& executor, int split_min_states)
      : executor_(executor), split_min_states_(split_min_states) {}

  // Takes over the call: it is finished here or by a worker.
  void run(const Call& call, int states, Algorithm algorithm, ChunkKernel kernel);
  void run(const Call& call, CallTask task);

 private:
  Executor& executor_;
  int split_min_states_;
};

}  // namespace torqued::server
