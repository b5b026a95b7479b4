// Tests server/compute/executor.cpp in process: every task submitted from several threads runs
// once, a request whose tasks do not all fit in the queue is refused whole, stop() runs what is
// queued before it joins, a call is told whether it would start at once, and clients take turns:
// one client's calls beyond its limit wait while another's run, and a long task gives its worker to
// another client's waiting call (the TSan stage of tests/run.sh runs this test).
#include "server/compute/executor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <string>
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

// A task that runs until released, telling when it has started.
struct Blocker {
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Executor::Task task() {
    return [this] {
      started.set_value();
      released.wait();
    };
  }
};

// What a Solve asks before it hands its call over early: whether a call of its client would start
// at once (two workers, one call per client).
TEST(ExecutorTest, ACallStartsAtOnceOnAnIdleWorkerWithinItsClientsLimit) {
  Executor executor(2, 16, nullptr, nullptr, 1);
  EXPECT_TRUE(executor.starts_at_once("10.0.0.1"));
  Blocker one, two;
  std::vector<Executor::Task> first{one.task()};
  ASSERT_TRUE(executor.try_submit(first, "10.0.0.1"));
  one.started.get_future().wait();
  EXPECT_FALSE(executor.starts_at_once("10.0.0.1"));  // at its limit
  EXPECT_TRUE(executor.starts_at_once("10.0.0.2"));
  std::vector<Executor::Task> second{two.task()};
  ASSERT_TRUE(executor.try_submit(second, "10.0.0.2"));
  two.started.get_future().wait();
  EXPECT_FALSE(executor.starts_at_once("10.0.0.3"));  // no worker idle
  one.release.set_value();
  two.release.set_value();
  executor.stop();
}

// Two workers, at most one call per client: a client's second call waits while its first runs,
// and another client's call takes the free worker.
TEST(ExecutorTest, AClientsCallsBeyondItsLimitWaitWhileAnotherClientsCallRuns) {
  Executor executor(2, 16, nullptr, nullptr, 1);
  Blocker first;
  std::vector<Executor::Task> a1{first.task()};
  ASSERT_TRUE(executor.try_submit(a1, "10.0.0.1"));
  first.started.get_future().wait();
  std::atomic<bool> second_ran{false};
  std::vector<Executor::Task> a2{[&] { second_ran = true; }};
  ASSERT_TRUE(executor.try_submit(a2, "10.0.0.1"));
  std::promise<void> other_ran;
  std::vector<Executor::Task> b{[&] { other_ran.set_value(); }};
  ASSERT_TRUE(executor.try_submit(b, "10.0.0.2"));
  EXPECT_EQ(other_ran.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_FALSE(second_ran.load());  // the free worker stayed for other clients
  first.release.set_value();
  executor.stop();
  EXPECT_TRUE(second_ran.load());
}

// The chunks of one call use every worker, whatever the client's limit.
TEST(ExecutorTest, TheChunksOfOneCallUseEveryWorker) {
  Executor executor(2, 16, nullptr, nullptr, 1);
  Blocker one, two;
  std::vector<Executor::Task> chunks{one.task(), two.task()};
  ASSERT_TRUE(executor.try_submit(chunks, "10.0.0.1"));
  EXPECT_EQ(one.started.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(two.started.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  one.release.set_value();
  two.release.set_value();
  executor.stop();
}

// One worker: a long task of one client asks between its steps whether to yield, gives the
// worker to another client's call when one waits, and finishes after it.
TEST(ExecutorTest, ALongTaskGivesItsWorkerToAnotherClientsWaitingCall) {
  Executor executor(1, 16, nullptr, nullptr);
  std::mutex mutex;
  std::vector<std::string> order;
  const auto log = [&](const std::string& what) {
    std::lock_guard lock(mutex);
    order.push_back(what);
  };
  std::promise<void> long_started;
  std::atomic<bool> other_submitted{false};
  std::function<void(int)> steps = [&](int from) {
    for (int step = from; step < 1000; ++step) {
      if (step == 0) long_started.set_value();
      if (step > from && executor.should_yield()) {
        log("yielded");
        executor.requeue([&steps, step] { steps(step); });
        return;
      }
      while (step == 1 && !other_submitted.load()) std::this_thread::yield();
    }
    log("long done");
  };
  std::vector<Executor::Task> long_call{[&] { steps(0); }};
  ASSERT_TRUE(executor.try_submit(long_call, "10.0.0.1"));
  long_started.get_future().wait();
  std::vector<Executor::Task> other{[&] { log("other"); }};
  ASSERT_TRUE(executor.try_submit(other, "10.0.0.2"));
  other_submitted = true;
  executor.stop();
  EXPECT_EQ(order, (std::vector<std::string>{"yielded", "other", "long done"}));
}

// Without another client waiting, a long task keeps its worker.
TEST(ExecutorTest, ATaskDoesNotYieldToItsOwnClient) {
  Executor executor(1, 16, nullptr, nullptr);
  std::promise<void> started, checked;
  std::promise<bool> answer;
  std::vector<Executor::Task> first{[&] {
    started.set_value();
    checked.get_future().wait();
    answer.set_value(executor.should_yield());
  }};
  ASSERT_TRUE(executor.try_submit(first, "10.0.0.1"));
  started.get_future().wait();
  std::vector<Executor::Task> same_client{[] {}};
  ASSERT_TRUE(executor.try_submit(same_client, "10.0.0.1"));
  checked.set_value();
  EXPECT_FALSE(answer.get_future().get());
  executor.stop();
}

}  // namespace
}  // namespace torqued::server
