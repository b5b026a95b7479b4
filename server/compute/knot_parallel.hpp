// The knots of one optimal-control iteration spread over the executor's workers. A solve runs as
// one task of the executor (its driver); each time FDDP differentiates its knots, the driver
// queues helper tasks for the other workers and works through the knots with them, taking them
// one at a time from a shared counter. The driver never waits for a helper that has not started:
// when the knots run out before a helper's turn comes (the other workers are busy with other
// clients' calls), the driver has done them all, and the late helper finds the round closed and
// ends at once. So a solve needs one worker to progress and uses as many as are free, and the
// executor's turns between clients go on (helpers queue in the solve's own group).
#pragma once

#include <functional>
#include <memory>

#include "server/compute/executor.hpp"

namespace torqued::server {

class KnotParallel {
 public:
  // `participants` threads at most: the calling one (which must run a task of `executor`) and
  // participants − 1 helpers. A null executor runs everything on the calling thread.
  KnotParallel(Executor* executor, int participants);
  // Late helpers find the rounds closed; none of them reads anything but the shared state.
  ~KnotParallel();

  KnotParallel(const KnotParallel&) = delete;
  KnotParallel& operator=(const KnotParallel&) = delete;

  int participants() const { return participants_; }

  // Calls work(slot, t) for every t in [0, count), each once, `slot` the participant's index
  // (0 for the calling thread), so that each participant uses its own scratch. Returns when all
  // are done; rethrows the first exception a call threw (the others stop taking knots then).
  void run(int count, const std::function<void(int slot, int t)>& work);

 private:
  struct Round;

  Executor* executor_;
  int participants_;
  std::shared_ptr<Round> round_;
};

}  // namespace torqued::server
