// Running a call's work: a batch is split into chunks of at least `split_min_states` states (at
// most one per worker), and the last chunk to end completes the call. A full queue answers
// RESOURCE_EXHAUSTED at once. Cancellation and the deadline are checked before a chunk starts,
// between the slices of states it runs (slices grow while they take under a millisecond, so the
// checks cost nothing measurable), and inside the engine's iterative loops (contact solvers,
// simulation steps) through the chunk's Interruption: work stops within milliseconds of the
// deadline or of the client going away, and the call ends DEADLINE_EXCEEDED or CANCELLED. The
// server bounds each batch's work too (--max-call-seconds), for clients that set no deadline and
// for the messages of a Session, which has none of its own.
// A state may weigh more than one dynamics call (a simulated trajectory weighs its steps): the
// thresholds then count weighted states. Batches of at most `inline_max_states` states skip the
// executor and run at once on the calling (gRPC) thread, with that thread's own workspaces: for a
// single state the hop to a worker costs more than the computation.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "server/compute/executor.hpp"
#include "server/compute/workspace_pool.hpp"
#include "server/transport/unary_call.hpp"

namespace torqued::server {

// Computes states [begin, end) with the worker's context; may throw (SingularSystemError becomes
// FAILED_PRECONDITION, Interrupted the call's CANCELLED or DEADLINE_EXCEEDED, WorkspaceLimitError
// RESOURCE_EXHAUSTED, anything else INTERNAL).
using ChunkKernel = std::function<void(WorkerContext& worker, int begin, int end)>;

// Work that is not a batch (registration, deletion): returns the call's status.
using CallTask = std::function<grpc::Status()>;

// Receives a batch's outcome once, on whichever thread ran its last chunk.
using BatchDone = std::function<void(const grpc::Status& status)>;

// RESOURCE_EXHAUSTED: the executor's queue cannot take a call's tasks.
grpc::Status queue_full(const Executor& executor);

// The input of a call's task that was queued before its input was ready, so that waking a
// worker, which took 0.15-0.2 ms on a VM's idle vCPU, overlaps the input's preparation on the gRPC
// thread. That thread open()s it once, after its last use of the call, with the input's status.
class PendingInput {
 public:
  void open(grpc::Status status);
  // The status given to open(), once it is given. A worker that arrives first yields its CPU for
  // up to about one wake-up's time, then sleeps until open().
  const grpc::Status& wait() const;

 private:
  grpc::Status status_;
  std::atomic<bool> opened_{false};
};

// Runs `task` as one call's work on `executor`, in the turn of `peer` (the executor's key: an
// address, or a connection); the task's status, or RESOURCE_EXHAUSTED when the queue is full,
// finishes the call. With an `input`, the task starts once the input is open and OK; its other
// status finishes the call instead. False when the queue was full: the call is finished then.
bool run_call_task(Executor& executor, const std::string& peer, const UnaryCall& call,
                   CallTask task, std::shared_ptr<const PendingInput> input = nullptr);

class BatchRunner {
 public:
  // A batch's work stops `max_call_seconds` after it starts (0: only the client's deadline).
  BatchRunner(Executor& executor, WorkspacePool& workspaces, Metrics& metrics, int split_min_states,
              int inline_max_states, double max_call_seconds)
      : executor_(executor),
        workspaces_(workspaces),
        metrics_(metrics),
        split_min_states_(split_min_states),
        inline_max_states_(inline_max_states),
        max_call_seconds_(max_call_seconds) {}

  // Takes over the call: it is finished here or by a worker. `cost` is the work of one state in
  // units of one dynamics call: the inline and split thresholds count states × cost, so heavy
  // work (contacts, long simulations) never runs on a gRPC thread.
  void run(const UnaryCall& call, int states, Algorithm algorithm, ChunkKernel kernel,
           std::int64_t cost = 1);
  void run(const UnaryCall& call, CallTask task);
  // The same for a message of a stream: `context` is the stream's, `done` gets the outcome.
  void run(grpc::CallbackServerContext* context, int states, Algorithm algorithm,
           ChunkKernel kernel, BatchDone done, std::int64_t cost = 1);

 private:
  Executor& executor_;
  WorkspacePool& workspaces_;
  Metrics& metrics_;
  int split_min_states_;
  int inline_max_states_;
  double max_call_seconds_;
};

}  // namespace torqued::server
