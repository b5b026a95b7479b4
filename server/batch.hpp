// Running a call's work: a batch is split into chunks of at least `split_min_states` states (at
// most one per worker), every chunk checks cancellation and the deadline before it starts, and
// the last chunk to end completes the call. A full queue answers RESOURCE_EXHAUSTED at once.
// A state may weigh more than one dynamics call (a simulated trajectory weighs its steps): the
// thresholds then count weighted states. Batches of at most `inline_max_states` states skip the
// executor and run at once on the calling (gRPC) thread, with that thread's own workspaces: for a
// single state the hop to a worker costs more than the computation.
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

// Receives a batch's outcome once, on whichever thread ran its last chunk.
using BatchDone = std::function<void(const grpc::Status& status)>;

class BatchRunner {
 public:
  BatchRunner(Executor& executor, Metrics& metrics, int split_min_states, int inline_max_states)
      : executor_(executor),
        metrics_(metrics),
        split_min_states_(split_min_states),
        inline_max_states_(inline_max_states) {}

  // Takes over the call: it is finished here or by a worker. `cost` is the work of one state in
  // units of one dynamics call: the inline and split thresholds count states × cost.
  void run(const Call& call, int states, Algorithm algorithm, ChunkKernel kernel, int cost = 1);
  void run(const Call& call, CallTask task);
  // The same for a message of a stream: `context` is the stream's, `done` gets the outcome.
  void run(grpc::CallbackServerContext* context, int states, Algorithm algorithm,
           ChunkKernel kernel, BatchDone done, int cost = 1);

 private:
  Executor& executor_;
  Metrics& metrics_;
  int split_min_states_;
  int inline_max_states_;
};

}  // namespace torqued::server
