// Tests server/compute/batch_runner.cpp in process: a small batch runs at once on the calling
// thread, a large one is split evenly into one chunk per worker (counting each state's weight),
// every state is computed exactly once, the outcome is reported once, engine errors become the
// statuses clients are promised, --max-call-seconds stops work between slices and inside the
// engine's long loops, a full queue refuses the batch at once, and a call's pending input reaches
// the worker waiting for it (the TSan stage of tests/run.sh runs this test). The calls' context is
// a bare grpc::CallbackServerContext: no deadline and never cancelled, so the server's own bound
// is the one deadline in play.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/interruption.hpp"
#include "server/compute/batch_runner.hpp"
#include "server/services/dynamics_rpcs.hpp"

namespace torqued::server {
namespace {

using ::testing::HasSubstr;

constexpr std::size_t kNoWorkspaceLimit = std::size_t{1} << 40;

// What a kernel saw: how often each state was computed, and on which threads.
struct Record {
  explicit Record(int states) : computed(states, 0) {}

  ChunkKernel kernel() {
    return [this](WorkerContext&, int begin, int end) {
      std::lock_guard lock(mutex);
      for (int s = begin; s < end; ++s) ++computed[s];
      threads.insert(std::this_thread::get_id());
    };
  }

  std::mutex mutex;
  std::vector<int> computed;
  std::set<std::thread::id> threads;
};

// One batch's outcome: its status and how many times it was reported.
struct Outcome {
  BatchDone done() {
    return [this](const grpc::Status& status) {
      if (reports.fetch_add(1) == 0) promise.set_value(status);
    };
  }
  grpc::Status wait() { return promise.get_future().get(); }

  std::promise<grpc::Status> promise;
  std::atomic<int> reports{0};
};

class BatchRunnerTest : public ::testing::Test {
 protected:
  // Two workers, as on the machines the server is sized for; batches over 4 states leave the
  // calling thread and are split in chunks of at least 64.
  BatchRunner runner(double max_call_seconds = 0.0) {
    return BatchRunner(executor_, workspaces_, metrics_, 64, 4, max_call_seconds);
  }

  // Runs a batch with --max-call-seconds at 0.2 s and waits for its outcome; then stops the
  // executor.
  grpc::Status run_bounded(int states, Algorithm algorithm, ChunkKernel kernel, std::int64_t cost) {
    Outcome outcome;
    runner(0.2).run(&context_, states, algorithm, std::move(kernel), outcome.done(), cost);
    const grpc::Status status = outcome.wait();
    executor_.stop();
    return status;
  }

  Metrics metrics_;
  MemoryBudget memory_{std::size_t{1} << 40};
  WorkspacePool workspaces_{0, kNoWorkspaceLimit, memory_};
  grpc::CallbackServerContext context_;
  Executor executor_{2, 16, nullptr, nullptr};  // stopped first: its tasks use the members above
};

TEST_F(BatchRunnerTest, ASmallBatchRunsAtOnceOnTheCallingThread) {
  Record record(3);
  Outcome outcome;
  runner().run(&context_, 3, InverseDynamicsRpc::kRnea, record.kernel(), outcome.done());
  // Reported before run() returned.
  EXPECT_EQ(outcome.reports.load(), 1);
  EXPECT_TRUE(outcome.wait().ok());
  EXPECT_EQ(record.computed, std::vector<int>(3, 1));
  EXPECT_EQ(record.threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_F(BatchRunnerTest, ALargeBatchIsSplitOverTheWorkersAndEachStateComputedOnce) {
  // 1,000 states: 15 chunks of 64 would fit, but there are two workers.
  Record record(1000);
  Outcome outcome;
  runner().run(&context_, 1000, InverseDynamicsRpc::kRnea, record.kernel(), outcome.done());
  EXPECT_TRUE(outcome.wait().ok());
  executor_.stop();
  EXPECT_EQ(outcome.reports.load(), 1);
  EXPECT_EQ(record.computed, std::vector<int>(1000, 1));
  EXPECT_EQ(record.threads.count(std::this_thread::get_id()), 0u);
  EXPECT_LE(record.threads.size(), 2u);
}

TEST_F(BatchRunnerTest, FewerStatesThanTwoChunksRunAsOneChunkOnAWorker) {
  Record record(100);  // 100 / 64: one chunk
  Outcome outcome;
  runner().run(&context_, 100, InverseDynamicsRpc::kRnea, record.kernel(), outcome.done());
  EXPECT_TRUE(outcome.wait().ok());
  executor_.stop();
  EXPECT_EQ(record.computed, std::vector<int>(100, 1));
  EXPECT_EQ(record.threads.size(), 1u);
  EXPECT_EQ(record.threads.count(std::this_thread::get_id()), 0u);
}

TEST_F(BatchRunnerTest, HeavyStatesLeaveTheCallingThreadByTheirWeight) {
  // 3 states of a weight of 100 calls each: 300 > 4, so not inline however few they are.
  Record record(3);
  Outcome outcome;
  runner().run(&context_, 3, InverseDynamicsRpc::kRnea, record.kernel(), outcome.done(), 100);
  EXPECT_TRUE(outcome.wait().ok());
  executor_.stop();
  EXPECT_EQ(record.computed, std::vector<int>(3, 1));
  EXPECT_EQ(record.threads.count(std::this_thread::get_id()), 0u);
}

// A kernel that throws `error` at state `at`.
template <class Error>
ChunkKernel throwing_at(int at, const char* message) {
  return [at, message](WorkerContext&, int begin, int end) {
    if (begin <= at && at < end) throw Error(message);
  };
}

TEST_F(BatchRunnerTest, EngineErrorsBecomeTheStatusesClientsArePromised) {
  struct Case {
    ChunkKernel kernel;
    grpc::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {throwing_at<SingularSystemError>(2, "singular at joint 'knee'"),
       grpc::StatusCode::FAILED_PRECONDITION, "joint 'knee'"},
      {throwing_at<WorkspaceLimitError>(2, "over --max-workspace-bytes"),
       grpc::StatusCode::RESOURCE_EXHAUSTED, "--max-workspace-bytes"},
      {throwing_at<std::runtime_error>(2, "unexpected"), grpc::StatusCode::INTERNAL, "unexpected"},
  };
  for (const Case& c : cases) {
    for (int states : {3, 1000}) {  // inline, and split over the workers
      SCOPED_TRACE(::testing::Message() << c.message << ", " << states << " states");
      Outcome outcome;
      runner().run(&context_, states, ForwardDynamicsRpc::kAba, c.kernel, outcome.done());
      const grpc::Status status = outcome.wait();
      EXPECT_EQ(status.error_code(), c.code);
      EXPECT_THAT(status.error_message(), HasSubstr(c.message));
    }
  }
  executor_.stop();
}

TEST_F(BatchRunnerTest, TheFirstFailingChunkDecidesAndTheOutcomeIsReportedOnce) {
  Outcome outcome;
  // Both chunks fail (states 0 and 999 are in different chunks): one status, one report.
  runner().run(
      &context_, 1000, ForwardDynamicsRpc::kAba,
      [](WorkerContext&, int begin, int end) {
        if (begin == 0) throw SingularSystemError("first chunk");
        if (end == 1000) throw WorkspaceLimitError("second chunk");
      },
      outcome.done());
  const grpc::Status status = outcome.wait();
  executor_.stop();
  EXPECT_EQ(outcome.reports.load(), 1);
  EXPECT_TRUE(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
              status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
}

// Whether the call a worker computes for must stop, as the engine's loops ask.
bool stop_requested(const WorkerContext& worker) {
  const Interruption& interruption = worker.interruption();
  return interruption.requested(interruption.state);
}

TEST_F(BatchRunnerTest, MaxCallSecondsStopsABatchBetweenSlices) {
  // 100,000 states of 1 ms each would take 50 s on the two workers; the bound is 0.2 s.
  constexpr int kStates = 100000;
  std::atomic<int> computed{0};
  std::atomic<int> computed_past_the_bound{0};
  const grpc::Status status = run_bounded(
      kStates, InverseDynamicsRpc::kRnea,
      [&](WorkerContext& worker, int begin, int end) {
        for (int s = begin; s < end; ++s) {
          if (stop_requested(worker)) ++computed_past_the_bound;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          ++computed;
        }
      },
      1);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("--max-call-seconds"));
  // A slice stops growing once it takes 1 ms, so it is one state here: past the bound, each of
  // the two chunks finishes at most the state it is in. A count of work, not of seconds, so that
  // it holds however loaded the machine is.
  EXPECT_LE(computed_past_the_bound.load(), 2);
  EXPECT_LT(computed.load(), kStates / 10);
}

TEST_F(BatchRunnerTest, MaxCallSecondsStopsTheEnginesLongLoops) {
  // One state whose engine loop never ends but polls the call's Interruption, as the contact
  // solvers and the simulation loop do.
  double work_past_the_bound = 0.0;
  const grpc::Status status = run_bounded(
      1, ContactDynamicsRpc::kContactDynamics,
      [&](WorkerContext& worker, int, int) {
        InterruptionPoll poll(worker.interruption());
        for (;;) {
          if (stop_requested(worker)) work_past_the_bound += 1.0;
          poll.add(1.0);
        }
      },
      100);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("--max-call-seconds"));
  // The loop stops at its first poll past the bound.
  EXPECT_LE(work_past_the_bound, InterruptionPoll::kWorkBetweenPolls);
}

TEST_F(BatchRunnerTest, AFullQueueRefusesTheBatchAtOnce) {
  Executor executor(1, 1, nullptr, nullptr);
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<Executor::Task> blocking;
  blocking.emplace_back([&started, released] {
    started.set_value();
    released.wait();
  });
  ASSERT_TRUE(executor.try_submit(blocking));
  started.get_future().wait();
  std::vector<Executor::Task> filler;
  filler.emplace_back([] {});
  ASSERT_TRUE(executor.try_submit(filler));  // the one queue slot

  Record record(1000);
  Outcome outcome;
  BatchRunner(executor, workspaces_, metrics_, 64, 4, 0.0)
      .run(&context_, 1000, InverseDynamicsRpc::kRnea, record.kernel(), outcome.done());
  EXPECT_EQ(outcome.reports.load(), 1);  // before run() returned
  const grpc::Status status = outcome.wait();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("--queue-capacity"));
  release.set_value();
  executor.stop();
  EXPECT_EQ(record.computed, std::vector<int>(1000, 0));
}

// A worker that took a Solve's call before its plan was ready waits for it: the status given to
// open() reaches a waiter that came first, past the time it yields its CPU, and one that comes
// after.
TEST(PendingInputTest, AWaiterGetsTheStatusOpenedBeforeOrAfterItCame) {
  PendingInput late;
  std::future<grpc::StatusCode> waited =
      std::async(std::launch::async, [&late] { return late.wait().error_code(); });
  // Well past the 200 µs a waiter yields before it sleeps.
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
  late.open({grpc::StatusCode::INVALID_ARGUMENT, "knots: must be at least 1"});
  EXPECT_EQ(waited.get(), grpc::StatusCode::INVALID_ARGUMENT);

  PendingInput early;
  early.open(grpc::Status::OK);
  EXPECT_TRUE(early.wait().ok());
}

}  // namespace
}  // namespace torqued::server
