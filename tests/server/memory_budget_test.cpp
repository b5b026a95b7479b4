// Tests server/base/memory_budget.cpp in process: reservations within the capacity, the reclaimer
// asked for what is missing, forced reservations past the capacity, and reservations released in
// part or when their holder ends, from several threads (the TSan stage runs this test).
#include "server/base/memory_budget.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace torqued::server {
namespace {

TEST(MemoryBudgetTest, ReservationsFitTheCapacityAndAreReleasedWithTheirHolder) {
  MemoryBudget budget(1000);
  {
    Reservation call;
    EXPECT_TRUE(call.add(budget, 600));
    EXPECT_TRUE(call.add(budget, 400));
    EXPECT_EQ(budget.reserved(), 1000u);
    Reservation other;
    EXPECT_FALSE(other.add(budget, 1));
    EXPECT_EQ(other.bytes(), 0u);
    EXPECT_EQ(call.bytes(), 1000u);
  }
  EXPECT_EQ(budget.reserved(), 0u);
}

TEST(MemoryBudgetTest, APartOfAReservationIsGivenBack) {
  MemoryBudget budget(1000);
  Reservation workspace;
  ASSERT_TRUE(workspace.add(budget, 700));
  workspace.release(300);
  EXPECT_EQ(workspace.bytes(), 400u);
  EXPECT_EQ(budget.reserved(), 400u);
  workspace.release(1000);  // more than it holds: all of it
  EXPECT_EQ(workspace.bytes(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
}

TEST(MemoryBudgetTest, TheReclaimerIsAskedForWhatIsMissing) {
  MemoryBudget budget(1000);
  Reservation idle;  // what the reclaimer can give back, as the workspace pool's idle workspaces
  ASSERT_TRUE(idle.add(budget, 700));
  std::vector<std::size_t> asked;
  budget.set_reclaimer([&](std::size_t wanted) {
    asked.push_back(wanted);
    idle.reset();
  });
  Reservation call;
  EXPECT_TRUE(call.add(budget, 500));
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], 200u);
  EXPECT_EQ(budget.reserved(), 500u);
  // Nothing left to reclaim: more than the capacity never fits, and the reclaimer is not asked.
  EXPECT_FALSE(call.add(budget, 1001));
  EXPECT_EQ(asked.size(), 1u);
}

TEST(MemoryBudgetTest, MemoryAlreadyAllocatedIsCountedPastTheCapacity) {
  MemoryBudget budget(100);
  Reservation grown;
  grown.force_add(budget, 150);
  EXPECT_EQ(budget.reserved(), 150u);
  Reservation call;
  EXPECT_FALSE(call.add(budget, 1));
  grown.reset();
  EXPECT_TRUE(call.add(budget, 100));
}

TEST(MemoryBudgetTest, ARefusalNamesTheFlagAndWhatIsFree) {
  MemoryBudget budget(1000);
  Reservation call;
  ASSERT_TRUE(call.add(budget, 900));
  const std::string message = budget.refusal("the response", 500);
  EXPECT_NE(message.find("the response needs 500 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("100 of the 1000 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("--memory-budget-bytes"), std::string::npos) << message;
}

TEST(MemoryBudgetTest, ThreadsReserveAndReleaseWithoutLosingAByte) {
  MemoryBudget budget(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        Reservation r;
        // Four threads of at most 32 bytes each may not all fit: a refusal reserves nothing.
        if (r.add(budget, 16 + i % 17)) {
          EXPECT_LE(budget.reserved(), 64u);
        }
        Reservation moved = std::move(r);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(budget.reserved(), 0u);
}

}  // namespace
}  // namespace torqued::server
