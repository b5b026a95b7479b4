// The executor: a fixed pool of worker threads fed by one bounded queue. Submitting never
// blocks: when the queue cannot take every task of a request, none is queued and the caller
// answers RESOURCE_EXHAUSTED. Tasks lease their models' workspaces from the WorkspacePool
// (workspace_pool.hpp), so requests run without allocating once a model has been computed.
//
// Fairness between clients. The tasks a call submits together are its group, and each group
// belongs to a peer (the client's address). Workers take the peers' queued groups in turn (round
// robin), and a peer may have at most `max_calls_per_peer` groups running at once: its other calls
// wait while other clients' calls run, so one client's long calls leave workers for the others
// (two calls of one client that each compute for minutes held both workers before). The chunks of
// one running call may still use every worker; a long chunk hands its worker over, between two
// slices of its states, when another client's call is waiting (should_yield(), requeue()).
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

namespace torqued::server {

class Executor {
 public:
  using Task = std::function<void()>;

  // `queue_depth` and `busy_workers` may be null (metrics off). `max_calls_per_peer` 0 means
  // workers - 1 (at least 1).
  Executor(int workers, int queue_capacity, prometheus::Gauge* queue_depth,
           prometheus::Gauge* busy_workers, int max_calls_per_peer = 0);
  // Runs what is queued, then joins the workers.
  ~Executor();

  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues all tasks, one call's, or none; false when they do not fit or the executor is
  // stopping. `peer` is the client's address (calls of one address share its limit).
  bool try_submit(std::vector<Task>& tasks, const std::string& peer = "");
  // Stops taking tasks, runs the queued ones and joins the workers.
  void stop();

  // From inside a task only: whether another peer's call waits for a worker that this task
  // could give it. A task that stops early requeue()s the rest of its work.
  bool should_yield();
  // From inside a task only: queues `rest` at the head of its call's peer, outside the queue's
  // capacity (the call was admitted already).
  void requeue(Task rest);

  // Whether a call of `peer` submitted now would start at once: a worker is idle, nothing waits
  // before it, and the peer is under its limit. A hint, which other submissions may change.
  bool starts_at_once(const std::string& peer);

  int workers() const { return static_cast<int>(threads_.size()); }
  int queue_capacity() const { return capacity_; }
  int max_calls_per_peer() const { return max_calls_per_peer_; }

 private:
  // One call's tasks.
  struct Group {
    std::string peer;
    int running = 0;  // its tasks running now
  };
  struct Queued {
    std::shared_ptr<Group> group;
    Task task;
  };
  struct Peer {
    std::deque<Queued> queue;
    int running_calls = 0;  // groups with a task running
    bool in_turn = false;   // listed in turns_
  };

  void run();
  // Under the lock: whether `peer` may start the task at the head of its queue.
  bool startable(const Peer& peer) const;
  // Under the lock: the next task a worker should start, taken from its peer's queue; false when
  // none may start.
  bool take(Queued& next);
  void update_depth();

  const int capacity_;
  const int max_calls_per_peer_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* busy_workers_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::unordered_map<std::string, Peer> peers_;
  std::deque<std::string> turns_;  // peers with queued tasks, in the order they are served
  int queued_ = 0;
  int busy_ = 0;  // workers running a task
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  // The group of the task this worker thread runs, for should_yield() and requeue().
  static thread_local std::shared_ptr<Group> current_group_;
};

}  // namespace torqued::server
