// Chunked execution of calls on the executor (see batch.hpp).
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

// Shared by the chunks of one call; the last chunk to end finishes the call.
struct BatchJob {
  BatchJob(const Call& c, Algorithm a, ChunkKernel k, int chunks)
      : call(c), algorithm(a), kernel(std::move(k)), remaining(chunks) {}

  void fail(grpc::Status s) {
    std::lock_guard lock(mutex);
    if (!failed.exchange(true)) status = std::move(s);
  }

  void run_chunk(WorkerContext& worker, int begin, int end) {
    if (!failed.load(std::memory_order_relaxed)) {
      if (grpc::Status alive = call.check_alive(); !alive.ok()) {
        fail(std::move(alive));
      } else {
        try {
          const Clock::time_point start = call.metrics().start();
          kernel(worker, begin, end);
          call.metrics().compute(algorithm, start);
        } catch (const SingularSystemError& e) {
          fail({grpc::StatusCode::FAILED_PRECONDITION, e.what()});
        } catch (const std::exception& e) {
          fail({grpc::StatusCode::INTERNAL, e.what()});
        }
      }
    }
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex);
      call.finish(status);
    }
  }

  const Call call;
  const Algorithm algorithm;
  const ChunkKernel kernel;
  std::atomic<int> remaining;
  std::atomic<bool> failed{false};
  std::mutex mutex;
  grpc::Status status;
};

}  // namespace

void BatchRunner::run(const Call& call, int states, Algorithm algorithm, ChunkKernel kernel) {
  call.metrics().batch_states(states);
  const int chunks = std::clamp(states / split_min_states_, 1, executor_.workers());
  auto job = std::make_shared<BatchJob>(call, algorithm, std::move(kernel), chunks);
  std::vector<Executor::Task> tasks;
  tasks.reserve(chunks);
  for (int c = 0; c < chunks; ++c) {
    // Even split: chunk c covers [c·states/chunks, (c+1)·states/chunks).
    const int begin = static_cast<int>(static_cast<std::int64_t>(states) * c / chunks);
    const int end = static_cast<int>(static_cast<std::int64_t>(states) * (c + 1) / chunks);
    tasks.emplace_back([job, begin, end](WorkerContext& w) { job->run_chunk(w, begin, end); });
  }
  if (!executor_.try_submit(tasks)) call.finish(queue_full(executor_));
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
