// Tests server/executor.cpp in process: every task submitted from several threads runs once, a
// request whose tasks do not all fit in the queue is refused whole, and stop() runs what is
// queued before it joins (the TSan stage of tests/run.sh runs this test).
#include "server/executor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>
#include <vector>

namespace torqued::server {
namespace {

TEST(ExecutorTest, EveryTaskSubmittedFromSeveralThreadsRunsOnce) {
  constexpr int kThreads = 4, kRequests = 200, kTasks = 3;
  Executor executor(2, kThreads * kRequests * kTasks, nullptr, nullptr);
  std::vector<int> runs(kThreads * kRequests * kTasks, 0);  // each slot written by one task
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      for (int r = 0; r < kRequests; ++r) {
        std::vector<Executor::Task> tasks;
        for (int k = 0; k < kTasks; ++k) {
          tasks.emplace_back([&runs, slot = (t * kRequests + r) * kTasks + k] { ++runs[slot]; });
        }
        ASSERT_TRUE(executor.try_submit(tasks));
      }
    });
  }
  for (std::thread& thread : submitters) thread.join();
  executor.stop();
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), static_cast<long>(runs.size()));
}

TEST(ExecutorTest, ARequestThatDoesNotFitIsRefusedWholeAndStopRunsTheQueue) {
  Executor executor(1, 2, nullptr, nullptr);
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  std::vector<Executor::Task> blocker;
  blocker.emplace_back([&] {
    started.set_value();
    released.wait();
    ++ran;
  });
  ASSERT_TRUE(executor.try_submit(blocker));
  started.get_future().wait();  // the worker holds it: the queue is empty

  std::vector<Executor::Task> three(3, [&] { ++ran; });
  EXPECT_FALSE(executor.try_submit(three));
  std::vector<Executor::Task> two(2, [&] { ++ran; });
  EXPECT_TRUE(executor.try_submit(two));
  std::vector<Executor::Task> one(1, [&] { ++ran; });
  EXPECT_FALSE(executor.try_submit(one));

  release.set_value();
  executor.stop();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_FALSE(executor.try_submit(one));
}

}  // namespace
}  // namespace torqued::server
