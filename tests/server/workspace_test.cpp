// Tests server/workspace.cpp in process: the pool keeps idle workspaces within its byte budget,
// least recently used evicted first, and frees a deleted model's; and its locking holds with
// threads leasing and returning workspaces of two models while one is deleted (the TSan stage of
// tests/run.sh runs this test).
#include "server/workspace.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "engine/model/build.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued::server {
namespace {

std::shared_ptr<RegisteredModel> registered(const std::string& id, int links) {
  test_support::RandomTreeOptions options;
  options.min_links = links;
  options.max_links = links;
  auto entry = std::make_shared<RegisteredModel>();
  entry->id = id;
  entry->model = build_model(test_support::random_tree_spec(links, options));
  return entry;
}

TEST(WorkspacePoolTest, KeepsIdleWorkspacesWithinTheBudgetLeastRecentlyUsedFirst) {
  const auto small = registered("small", 3);
  const auto large = registered("large", 30);
  const std::size_t small_bytes = ModelWorkspace(*small->model).heap_bytes();
  const std::size_t large_bytes = ModelWorkspace(*large->model).heap_bytes();
  ASSERT_LT(small_bytes, large_bytes);
  WorkspacePool pool(large_bytes + small_bytes);

  std::unique_ptr<ModelWorkspace> first = pool.acquire(*large);
  std::unique_ptr<ModelWorkspace> second = pool.acquire(*small);
  std::unique_ptr<ModelWorkspace> third = pool.acquire(*small);
  pool.release(*large, std::move(first));
  pool.release(*small, std::move(second));
  EXPECT_EQ(pool.idle_count(), 2u);
  EXPECT_EQ(pool.idle_bytes(), large_bytes + small_bytes);
  // Over the budget now: the large one, released first, goes.
  pool.release(*small, std::move(third));
  EXPECT_EQ(pool.idle_count(), 2u);
  EXPECT_EQ(pool.idle_bytes(), 2 * small_bytes);

  small->deleted.store(true);
  pool.forget(*small);
  EXPECT_EQ(pool.idle_count(), 0u);
  pool.release(*small, pool.acquire(*small));  // a deleted model's workspace is not kept
  EXPECT_EQ(pool.idle_count(), 0u);
}

TEST(WorkspacePoolTest, ThreadsLeaseAndReturnWorkspacesWhileAModelIsDeleted) {
  const auto kept = registered("kept", 12);
  const auto deleted = registered("deleted", 8);
  // Room for a few idle workspaces, so that releases also evict.
  WorkspacePool pool(3 * ModelWorkspace(*kept->model).heap_bytes());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        WorkerContext worker(pool, Interruption{});
        for (const RegisteredModel* entry : {kept.get(), deleted.get()}) {
          // Writing the whole workspace: two threads holding one would race here.
          ModelWorkspace& workspace = worker.workspace((i + t) % 2 == 0 ? *entry : *kept);
          std::fill(workspace.forces.begin(), workspace.forces.end(), Force::Zero());
          workspace.data.tau.setConstant(t);
        }
      }
    });
  }
  // As the catalog deletes a model: marked first, then its idle workspaces freed.
  deleted->deleted.store(true);
  pool.forget(*deleted);
  for (std::thread& thread : threads) thread.join();
  // Only the kept model's workspaces are idle: forgetting it empties the pool.
  EXPECT_GT(pool.idle_count(), 0u);
  pool.forget(*kept);
  EXPECT_EQ(pool.idle_count(), 0u);
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

}  // namespace
}  // namespace torqued::server
