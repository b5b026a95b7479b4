// Chunked execution of calls on the executor, and inline execution of small ones (see
// batch.hpp).
#include "server/batch.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "engine/algorithms/aba.hpp"

namespace torqued::server {
namespace {

grpc::Status queue_full(const Executor& executor) {
  return {grpc::StatusCode::RESOURCE_EXHAUSTED, "the server is overloaded: its work queue (" +
                                                    std::to_string(executor.queue_capacity()) +
                                                    " tasks) is full; retry with backoff"};
}

// Runs one chunk and maps what the engine throws to a status.
grpc::Status run_chunk(const ChunkKernel& kernel, Algorithm algorithm, Metrics& metrics,
                       WorkerContext& worker, int begin, int end) {
  try {
    const Clock::time_point start = metrics.start();
    kernel(worker, begin, end);
    metrics.compute(algorithm, start);
    return grpc::Status::OK;
  } catch (const SingularSystemError& e) {
    return {grpc::StatusCode::FAILED_PRECONDITION, e.what()};
  } catch (const std::exception& e) {
    return {grpc::StatusCode::INTERNAL, e.what()};
  }
}

// Shared by the chunks of one call; the last chunk to end reports the outcome.
struct BatchJob {
  BatchJob(grpc::CallbackServerContext* c, Metrics& m, Algorithm a, ChunkKernel k, BatchDone d,
           int chunks)
      : context(c),
        metrics(m),
        algorithm(a),
        kernel(std::move(k)),
        done(std::move(d)),
        remaining(chunks) {}

  void fail(grpc::Status s) {
    std::lock_guard lock(mutex);
    if (!failed.exchange(true)) status = std::move(s);
  }

  void run(WorkerContext& worker, int begin, int end) {
    if (!failed.load(std::memory_order_relaxed)) {
      grpc::Status s = check_alive(*context);
      if (s.ok()) s = run_chunk(kernel, algorithm, metrics, worker, begin, end);
      if (!s.ok()) fail(std::move(s));
    }
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex);
      done(status);
    }
  }

  grpc::CallbackServerContext* const context;
  Metrics& metrics;
  const Algorithm algorithm;
  const ChunkKernel kernel;
  const BatchDone done;
  std::atomic<int> remaining;
  std::atomic<bool> failed{false};
  std::mutex mutex;
  grpc::Status status;
};

}  // namespace

void BatchRunner::run(const Call& call, int states, Algorithm algorithm, ChunkKernel kernel,
                      int cost) {
  run(
      call.context(), states, algorithm, std::move(kernel),
      [call](const grpc::Status& status) { call.finish(status); }, cost);
}

void BatchRunner::run(grpc::CallbackServerContext* context, int states, Algorithm algorithm,
                      ChunkKernel kernel, BatchDone done, int cost) {
  metrics_.batch_states(states);
  const std::int64_t work = static_cast<std::int64_t>(states) * cost;
  if (work <= inline_max_states_) {
    grpc::Status status = check_alive(*context);
    if (status.ok()) {
      status = run_chunk(kernel, algorithm, metrics_, WorkerContext::this_thread(), 0, states);
    }
    done(status);
    return;
  }
  const int chunks = static_cast<int>(
      std::clamp<std::int64_t>(work / split_min_states_, 1, std::min(states, executor_.workers())));
  auto job = std::make_shared<BatchJob>(context, metrics_, algorithm, std::move(kernel),
                                        std::move(done), chunks);
  std::vector<Executor::Task> tasks;
  tasks.reserve(chunks);
  for (int c = 0; c < chunks; ++c) {
    // Even split: chunk c covers [c·states/chunks, (c+1)·states/chunks).
    const int begin = static_cast<int>(static_cast<std::int64_t>(states) * c / chunks);
    const int end = static_cast<int>(static_cast<std::int64_t>(states) * (c + 1) / chunks);
    tasks.emplace_back([job, begin, end](WorkerContext& w) { job->run(w, begin, end); });
  }
  if (!executor_.try_submit(tasks)) job->done(queue_full(executor_));
}

void BatchRunner::run(const Call& call, CallTask task) {
  std::vector<Executor::Task> tasks;
  tasks.emplace_back([call, task = std::move(task)](WorkerContext&) {
    grpc::Status status;
    if (status = call.check_alive(); status.ok()) {
      try {
        status = task();
      } catch (const std::exception& e) {
        status = {grpc::StatusCode::INTERNAL, e.what()};
      }
    }
    call.finish(status);
  });
  if (!executor_.try_submit(tasks)) call.finish(queue_full(executor_));
}

}  // namespace torqued::server
