// Rounds of knots shared between a solve's driver and its helpers (see knot_parallel.hpp).
#include "server/compute/knot_parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <vector>

namespace torqued::server {

struct KnotParallel::Round {
  std::mutex mutex;
  std::condition_variable idle;
  // The open round's work, null between rounds and once the solve has ended.
  const std::function<void(int, int)>* work = nullptr;
  int count = 0;
  std::atomic<int> next{0};
  int active = 0;                 // helpers in the open round
  int queued = 0;                 // helpers queued and not started
  std::vector<bool> slot_in_use;  // the helpers' slots, 1 … participants − 1
  std::exception_ptr error;

  // Takes knots until none is left; the first exception stops every participant.
  void work_through(int slot, const std::function<void(int, int)>& f) {
    for (int t = next.fetch_add(1, std::memory_order_relaxed); t < count;
         t = next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        f(slot, t);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        next.store(count, std::memory_order_relaxed);
        return;
      }
    }
  }

  void help() {
    int slot = 0;
    const std::function<void(int, int)>* f = nullptr;
    {
      std::lock_guard lock(mutex);
      --queued;
      if (work == nullptr) return;
      const auto free = std::find(slot_in_use.begin() + 1, slot_in_use.end(), false);
      if (free == slot_in_use.end()) return;
      *free = true;
      slot = static_cast<int>(free - slot_in_use.begin());
      ++active;
      f = work;
    }
    work_through(slot, *f);
    {
      std::lock_guard lock(mutex);
      slot_in_use[static_cast<std::size_t>(slot)] = false;
      --active;
    }
    idle.notify_all();
  }
};

KnotParallel::KnotParallel(Executor* executor, int participants)
    : executor_(executor),
      participants_(executor == nullptr ? 1 : std::max(1, participants)),
      round_(std::make_shared<Round>()) {
  round_->slot_in_use.assign(static_cast<std::size_t>(participants_), false);
}

KnotParallel::~KnotParallel() {
  std::lock_guard lock(round_->mutex);
  round_->work = nullptr;
}

void KnotParallel::run(int count, const std::function<void(int slot, int t)>& work) {
  Round& round = *round_;
  int helpers = 0;
  {
    std::lock_guard lock(round.mutex);
    round.work = &work;
    round.count = count;
    round.next.store(0, std::memory_order_relaxed);
    round.error = nullptr;
    // Helpers still queued from an earlier round join this one when they start.
    helpers = std::max(0, std::min(participants_, count) - 1 - round.queued);
    round.queued += helpers;
  }
  for (int h = 0; h < helpers; ++h) executor_->requeue([round = round_] { round->help(); });
  round.work_through(0, work);
  std::unique_lock lock(round.mutex);
  round.idle.wait(lock, [&] { return round.active == 0; });
  round.work = nullptr;
  if (round.error) std::rethrow_exception(round.error);
}

}  // namespace torqued::server
