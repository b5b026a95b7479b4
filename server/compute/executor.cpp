// Worker pool, bounded queue and turns between clients (see executor.hpp).
#include "server/compute/executor.hpp"

#include <algorithm>

namespace torqued::server {

thread_local std::shared_ptr<Executor::Group> Executor::current_group_;

Executor::Executor(int workers, int queue_capacity, prometheus::Gauge* queue_depth,
                   prometheus::Gauge* busy_workers, int max_calls_per_peer)
    : capacity_(queue_capacity),
      max_calls_per_peer_(max_calls_per_peer > 0 ? max_calls_per_peer : std::max(1, workers - 1)),
      queue_depth_(queue_depth),
      busy_workers_(busy_workers) {
  threads_.reserve(workers);
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { run(); });
}

Executor::~Executor() { stop(); }

bool Executor::try_submit(std::vector<Task>& tasks, const std::string& peer) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queued_ + tasks.size() > static_cast<std::size_t>(capacity_)) return false;
    auto group = std::make_shared<Group>();
    group->peer = peer;
    Peer& p = peers_[peer];
    for (Task& t : tasks) p.queue.push_back({group, std::move(t)});
    queued_ += static_cast<int>(tasks.size());
    if (!p.in_turn) {
      p.in_turn = true;
      turns_.push_back(peer);
    }
    update_depth();
  }
  // One idle worker per task: waking them all for one task sends the others back to sleep, each
  // a wake-up taking CPU from the calls in flight.
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

bool Executor::startable(const Peer& peer) const {
  if (peer.queue.empty()) return false;
  // The other chunks of a running call may start; a new call waits for the peer's limit.
  return peer.queue.front().group->running > 0 || peer.running_calls < max_calls_per_peer_;
}

bool Executor::take(Queued& next) {
  for (auto turn = turns_.begin(); turn != turns_.end(); ++turn) {
    Peer& peer = peers_[*turn];
    if (!startable(peer)) continue;
    next = std::move(peer.queue.front());
    peer.queue.pop_front();
    --queued_;
    // Its next task waits for the other peers' turns.
    const std::string name = std::move(*turn);
    turns_.erase(turn);
    if (peer.queue.empty()) {
      peer.in_turn = false;
    } else {
      turns_.push_back(name);
    }
    if (next.group->running++ == 0) ++peer.running_calls;
    ++busy_;
    update_depth();
    return true;
  }
  return false;
}

void Executor::run() {
  for (;;) {
    Queued next;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return take(next) || (stopping_ && queued_ == 0); });
      if (!next.task) return;  // stopping and drained
    }
    if (busy_workers_ != nullptr) busy_workers_->Increment();
    current_group_ = next.group;
    next.task();
    current_group_.reset();
    if (busy_workers_ != nullptr) busy_workers_->Decrement();
    bool waiting = false;
    {
      std::lock_guard lock(mutex_);
      Peer& peer = peers_[next.group->peer];
      if (--next.group->running == 0) --peer.running_calls;
      --busy_;
      if (peer.running_calls == 0 && peer.queue.empty()) peers_.erase(next.group->peer);
      waiting = queued_ > 0;
    }
    // A peer at its limit may start its next call now; with nothing queued there is nobody to
    // wake.
    if (waiting) ready_.notify_all();
  }
}

bool Executor::starts_at_once(const std::string& peer) {
  std::lock_guard lock(mutex_);
  if (busy_ >= workers() || queued_ > 0) return false;
  const auto p = peers_.find(peer);
  return p == peers_.end() || p->second.running_calls < max_calls_per_peer_;
}

bool Executor::should_yield() {
  if (!current_group_) return false;
  std::lock_guard lock(mutex_);
  for (const std::string& name : turns_) {
    if (name != current_group_->peer && startable(peers_.at(name))) return true;
  }
  return false;
}

void Executor::requeue(Task rest) {
  {
    std::lock_guard lock(mutex_);
    Peer& peer = peers_[current_group_->peer];
    peer.queue.push_front({current_group_, std::move(rest)});
    ++queued_;
    if (!peer.in_turn) {
      peer.in_turn = true;
      turns_.push_back(current_group_->peer);
    }
    update_depth();
  }
  ready_.notify_one();
}

void Executor::update_depth() {
  if (queue_depth_ != nullptr) queue_depth_->Set(static_cast<double>(queued_));
}

}  // namespace torqued::server
