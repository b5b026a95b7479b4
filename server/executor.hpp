// The executor: a fixed pool of worker threads fed by one bounded queue. Submitting never
// blocks: when the queue cannot take every task of a request, none is queued and the caller
// answers RESOURCE_EXHAUSTED. Tasks lease their models' workspaces from the WorkspacePool
// (workspace.hpp), so requests run without allocating once a model has been computed.
#pragma once

#include <prometheus/gauge.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace torqued::server {

class Executor {
 public:
  using Task = std::function<void()>;

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
