// Worker pool and bounded queue (see executor.hpp).
#include "server/executor.hpp"

namespace torqued::server {

Executor::Executor(int workers, int queue_capacity, prometheus::Gauge* queue_depth,
                   prometheus::Gauge* busy_workers)
    : capacity_(queue_capacity), queue_depth_(queue_depth), busy_workers_(busy_workers) {
  threads_.reserve(workers);
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { run(); });
}

Executor::~Executor() { stop(); }

bool Executor::try_submit(std::vector<Task>& tasks) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() + tasks.size() > static_cast<std::size_t>(capacity_)) {
      return false;
    }
    for (Task& t : tasks) queue_.push_back(std::move(t));
    if (queue_depth_ != nullptr) queue_depth_->Set(static_cast<double>(queue_.size()));
  }
  if (tasks.size() == 1) {
    ready_.notify_one();
  } else {
    ready_.notify_all();
  }
  return true;
}

void Executor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Executor::run() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      if (queue_depth_ != nullptr) queue_depth_->Set(static_cast<double>(queue_.size()));
    }
    if (busy_workers_ != nullptr) busy_workers_->Increment();
    task();
    if (busy_workers_ != nullptr) busy_workers_->Decrement();
  }
}

}  // namespace torqued::server
