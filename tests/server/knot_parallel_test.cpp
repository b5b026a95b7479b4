// Tests server/compute/knot_parallel.cpp in process: every knot of every round is done once, each
// slot by one thread at a time, whichever round the helpers start in; the first exception of a
// round is rethrown and the next round runs; a helper that starts after the solve has ended does
// nothing (the ASan and TSan stages of tests/run.sh run this test).
#include "server/compute/knot_parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <stdexcept>
#include <vector>

#include "server/compute/executor.hpp"

namespace torqued::server {
namespace {

// Runs `solve` as one task of `executor` (a solve's driver) and waits for it.
void drive(Executor& executor, const std::function<void()>& solve) {
  std::promise<void> done;
  std::vector<Executor::Task> task;
  task.emplace_back([&] {
    try {
      solve();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  ASSERT_TRUE(executor.try_submit(task, "solver"));
  done.get_future().get();
}

TEST(KnotParallelTest, EveryKnotOfEveryRoundRunsOnceEachSlotOnOneThreadAtATime) {
  Executor executor(3, 64, nullptr, nullptr);
  drive(executor, [&] {
    KnotParallel parallel(&executor, 3);
    std::vector<std::atomic<bool>> slot_busy(3);
    for (int round = 0; round < 300; ++round) {
      const int count = 1 + round % 40;
      std::vector<std::atomic<int>> done(static_cast<std::size_t>(count));
      parallel.run(count, [&](int slot, int t) {
        ASSERT_FALSE(slot_busy[static_cast<std::size_t>(slot)].exchange(true));
        ++done[static_cast<std::size_t>(t)];
        slot_busy[static_cast<std::size_t>(slot)] = false;
      });
      for (int t = 0; t < count; ++t) ASSERT_EQ(done[static_cast<std::size_t>(t)], 1) << t;
    }
  });
}

TEST(KnotParallelTest, AKnotsExceptionIsRethrownAndTheNextRoundRuns) {
  Executor executor(2, 64, nullptr, nullptr);
  drive(executor, [&] {
    KnotParallel parallel(&executor, 2);
    EXPECT_THROW(parallel.run(50,
                              [](int, int t) {
                                if (t == 7) throw std::runtime_error("knot 7");
                              }),
                 std::runtime_error);
    std::atomic<int> done{0};
    parallel.run(50, [&](int, int) { ++done; });
    EXPECT_EQ(done, 50);
  });
}

TEST(KnotParallelTest, AHelperThatStartsAfterTheSolveEndedDoesNothing) {
  // Another client's call holds the second worker, so the solve's helper stays queued until the
  // driver's worker is free, after the solve and its rounds are gone.
  Executor executor(2, 64, nullptr, nullptr);
  std::promise<void> blocking, release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<Executor::Task> blocker;
  blocker.emplace_back([&] {
    blocking.set_value();
    released.wait();
  });
  ASSERT_TRUE(executor.try_submit(blocker, "other client"));
  blocking.get_future().wait();
  std::atomic<int> by_helpers{0}, done{0};
  drive(executor, [&] {
    KnotParallel parallel(&executor, 2);
    for (int round = 0; round < 3; ++round) {
      parallel.run(30, [&](int slot, int) {
        ++done;
        if (slot != 0) ++by_helpers;
      });
    }
  });
  release.set_value();
  executor.stop();  // runs the late helper, then joins
  EXPECT_EQ(done, 90);
  EXPECT_EQ(by_helpers, 0);
}

}  // namespace
}  // namespace torqued::server
