// Chunked execution of calls on the executor, and inline execution of small ones (see
// batch_runner.hpp).
#include "server/compute/batch_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/algorithms/aba.hpp"

namespace torqued::server {
namespace {

// A slice of a chunk's states doubles while it takes less than this: the deadline is checked
// often enough, and rarely enough not to show in the cost of cheap states.
constexpr std::chrono::microseconds kSliceTarget(1000);

// About what waking a sleeping worker costs (0.15-0.2 ms on a VM's idle vCPU): a worker waiting
// for a PendingInput yields its CPU this long before it sleeps, which would cost another wake-up.
constexpr std::chrono::microseconds kWakeUpTime(200);

// Runs states [begin, end) in slices, checking the call between them, and maps what the engine
// throws to a status. On an executor's worker (`executor` not null) it stops between two slices
// when another client's call waits for the worker: `next` is then the first state not computed
// (else `end`).
grpc::Status run_chunk(const ChunkKernel& kernel, Algorithm algorithm, Metrics& metrics,
                       WorkspacePool& workspaces, const CallLimit& limit, int begin, int end,
                       Executor* executor, int& next) {
  next = end;
  try {
    WorkerContext worker(workspaces, Interruption{&call_should_stop, &limit}, algorithm.workspaces);
    const Clock::time_point start = metrics.start();
    int slice = 1;
    for (int first = begin; first < end;) {
      const int last = first + std::min(slice, end - first);
      const auto slice_start = std::chrono::steady_clock::now();
      kernel(worker, first, last);
      first = last;
      if (first == end) break;
      if (grpc::Status alive = check_alive(limit); !alive.ok()) return alive;
      if (executor != nullptr && executor->should_yield()) {
        next = first;
        break;
      }
      if (std::chrono::steady_clock::now() - slice_start < kSliceTarget && slice < (1 << 20)) {
        slice *= 2;
      }
    }
    metrics.compute(algorithm.name, start);
    return grpc::Status::OK;
  } catch (const SingularSystemError& e) {
    return {grpc::StatusCode::FAILED_PRECONDITION, e.what()};
  } catch (const Interrupted&) {
    const grpc::Status alive = check_alive(limit);
    return alive.ok() ? grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled") : alive;
  } catch (const WorkspaceLimitError& e) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, e.what()};
  } catch (const std::bad_alloc&) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "the server could not allocate the memory this call needs"};
  } catch (const std::exception& e) {
    return {grpc::StatusCode::INTERNAL, e.what()};
  }
}

// Shared by the chunks of one call; the last chunk to end reports the outcome.
struct ChunkedCall : std::enable_shared_from_this<ChunkedCall> {
  ChunkedCall(const CallLimit& l, Metrics& m, WorkspacePool& w, Executor& e, Algorithm a,
              ChunkKernel k, BatchDone d, int chunks)
      : limit(l),
        metrics(m),
        workspaces(w),
        executor(e),
        algorithm(a),
        kernel(std::move(k)),
        done(std::move(d)),
        remaining(chunks) {}

  void fail(grpc::Status s) {
    std::lock_guard lock(mutex);
    if (!failed.exchange(true)) status = std::move(s);
  }

  void run(int begin, int end) {
    if (!failed.load(std::memory_order_relaxed)) {
      grpc::Status s = check_alive(limit);
      int next = end;
      if (s.ok()) {
        s = run_chunk(kernel, algorithm, metrics, workspaces, limit, begin, end, &executor, next);
      }
      if (!s.ok()) {
        fail(std::move(s));
      } else if (next < end) {
        // Another client's call takes the worker; the rest of the chunk waits for its turn.
        executor.requeue([call = shared_from_this(), next, end] { call->run(next, end); });
        return;
      }
    }
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex);
      done(status);
    }
  }

  const CallLimit limit;
  Metrics& metrics;
  WorkspacePool& workspaces;
  Executor& executor;
  const Algorithm algorithm;
  const ChunkKernel kernel;
  const BatchDone done;
  std::atomic<int> remaining;
  std::atomic<bool> failed{false};
  std::mutex mutex;
  grpc::Status status;
};

}  // namespace

void BatchRunner::run(const UnaryCall& call, int states, Algorithm algorithm, ChunkKernel kernel,
                      std::int64_t cost) {
  run(
      call.context(), states, algorithm, std::move(kernel),
      [call](const grpc::Status& status) { call.finish(status); }, cost);
}

void BatchRunner::run(grpc::CallbackServerContext* context, int states, Algorithm algorithm,
                      ChunkKernel kernel, BatchDone done, std::int64_t cost) {
  metrics_.batch_states(states);
  const CallLimit limit = call_limit(context, max_call_seconds_);
  const std::int64_t work = static_cast<std::int64_t>(states) * cost;
  if (work <= inline_max_states_) {
    grpc::Status status = check_alive(limit);
    int next = states;
    if (status.ok()) {
      status = run_chunk(kernel, algorithm, metrics_, workspaces_, limit, 0, states, nullptr, next);
    }
    done(status);
    return;
  }
  const int chunks = static_cast<int>(
      std::clamp<std::int64_t>(work / split_min_states_, 1, std::min(states, executor_.workers())));
  auto job = std::make_shared<ChunkedCall>(limit, metrics_, workspaces_, executor_, algorithm,
                                           std::move(kernel), std::move(done), chunks);
  std::vector<Executor::Task> tasks;
  tasks.reserve(chunks);
  for (int c = 0; c < chunks; ++c) {
    // Even split: chunk c covers [c·states/chunks, (c+1)·states/chunks).
    const int begin = static_cast<int>(static_cast<std::int64_t>(states) * c / chunks);
    const int end = static_cast<int>(static_cast<std::int64_t>(states) * (c + 1) / chunks);
    tasks.emplace_back([job, begin, end] { job->run(begin, end); });
  }
  if (!executor_.try_submit(tasks, client_address(*context))) job->done(queue_full(executor_));
}

grpc::Status queue_full(const Executor& executor) {
  return {grpc::StatusCode::RESOURCE_EXHAUSTED, "the server is overloaded: its work queue (" +
                                                    std::to_string(executor.queue_capacity()) +
                                                    " tasks, --queue-capacity) is full; retry with "
                                                    "backoff"};
}

void PendingInput::open(grpc::Status status) {
  status_ = std::move(status);
  opened_.store(true, std::memory_order_release);
  opened_.notify_all();
}

const grpc::Status& PendingInput::wait() const {
  const auto spin_end = std::chrono::steady_clock::now() + kWakeUpTime;
  while (!opened_.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() < spin_end) {
      std::this_thread::yield();
    } else {
      opened_.wait(false, std::memory_order_acquire);
    }
  }
  return status_;
}

bool run_call_task(Executor& executor, const std::string& peer, const UnaryCall& call,
                   CallTask task, std::shared_ptr<const PendingInput> input) {
  std::vector<Executor::Task> tasks;
  tasks.emplace_back([call, task = std::move(task), input = std::move(input)] {
    // Before anything that may finish the call: the thread preparing the input may still use it.
    grpc::Status status = input ? input->wait() : grpc::Status::OK;
    if (status.ok()) status = call.check_alive();
    if (status.ok()) {
      try {
        status = task();
      } catch (const std::exception& e) {
        status = {grpc::StatusCode::INTERNAL, e.what()};
      }
    }
    call.finish(status);
  });
  if (executor.try_submit(tasks, peer)) return true;
  call.finish(queue_full(executor));
  return false;
}

void BatchRunner::run(const UnaryCall& call, CallTask task) {
  run_call_task(executor_, client_address(*call.context()), call, std::move(task));
}

}  // namespace torqued::server
