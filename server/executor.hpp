// The executor: a fixed pool of worker threads fed by one bounded queue. Submitting never
// blocks: when the queue cannot take every task of a request, none is queued and the caller
// answers RESOURCE_EXHAUSTED. Each worker keeps a ModelWorkspace per model id, so requests run
// without allocating once a worker has seen a model.
#pragma once

#include <prometheus/gauge.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/workspace.hpp"

namespace torqued::server {

// A worker's private state, handed to every task it runs.
class WorkerContext {
 public:
  // The calling thread's context: a worker's, or that of a gRPC thread running small requests
  // inline.
  static WorkerContext& this_thread();

  // The workspace for the model with this id (same id = same model, so any cached workspace
  // fits). Created on first use; the cache is bounded.
  ModelWorkspace& workspace(const std::string& model_id, const Model& model);

 private:
  static constexpr std::size_t kMaxCachedModels = 64;
  std::unordered_map<std::string, std::unique_ptr<ModelWorkspace>> cache_;
};

class Executor {
 public:
  using Task = std::function<void(WorkerContext&)>;

  // `queue_depth` and `busy_workers` may be null (metrics off).
  Executor(int workers, int queue_capacity, prometheus::Gauge* queue_depth,
           prometheus::Gauge* busy_workers);
  // Runs what is queued, then joins the workers.
  ~Executor();

  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues all tasks or none; false when they do not fit or the executor is stopping.
  bool try_submit(std::vector<Task>& tasks);
  // Stops taking tasks, runs the queued ones and joins the workers.
  void stop();

  int workers() const { return static_cast<int>(threads_.size()); }
  int queue_capacity() const { return capacity_; }

 private:
  void run();

  const int capacity_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* busy_workers_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace torqued::server
