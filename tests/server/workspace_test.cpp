// Tests server/compute/workspace_pool.cpp in process: the pool keeps idle workspaces within its
// byte budget, least recently used evicted first, and frees a deleted model's; it accounts for the
// engine workspaces a call will bind before they are bound, so that a call never grows a workspace
// past
// --max-workspace-bytes; and its locking holds with threads leasing and returning workspaces of
// two models while one is deleted (the TSan stage of tests/run.sh runs this test). A workspace
// holding a solver counts its bytes and is leased first when the caller prefers it. Byte counts
// are exact integers, compared exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"
#include "server/compute/workspace_pool.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued::server {
namespace {

// A budget no test here reaches.
MemoryBudget& plenty() {
  static MemoryBudget budget(std::size_t{1} << 40);
  return budget;
}

using ::testing::HasSubstr;

// No call in the tests below comes near this.
constexpr std::size_t kNoWorkspaceLimit = std::size_t{1} << 40;

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
  WorkspacePool pool(large_bytes + small_bytes, kNoWorkspaceLimit, plenty());

  std::unique_ptr<ModelWorkspace> first = pool.acquire(*large, {});
  std::unique_ptr<ModelWorkspace> second = pool.acquire(*small, {});
  std::unique_ptr<ModelWorkspace> third = pool.acquire(*small, {});
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
  pool.release(*small, pool.acquire(*small, {}));  // a deleted model's workspace is not kept
  EXPECT_EQ(pool.idle_count(), 0u);
}

// Buffers of a fixed size in a workspace, as a solve's solver is kept there.
class FixedBuffers final : public CallBuffers {
 public:
  explicit FixedBuffers(std::size_t bytes) : bytes_(bytes) {}
  std::size_t heap_bytes() const override { return bytes_; }

 private:
  std::size_t bytes_;
};

TEST(WorkspacePoolTest, AWorkspaceHoldingASolverIsCountedAndLeasedFirstWhenPreferred) {
  const auto entry = registered("arm", 6);
  MemoryBudget budget(std::size_t{1} << 30);
  WorkspacePool pool(std::size_t{1} << 20, kNoWorkspaceLimit, budget);
  const std::size_t plain_bytes = ModelWorkspace(*entry->model).heap_bytes();
  constexpr std::size_t kSolverBytes = 10000;
  std::unique_ptr<ModelWorkspace> with = pool.acquire(*entry, {});
  std::unique_ptr<ModelWorkspace> without = pool.acquire(*entry, {});
  with->solver = std::make_unique<FixedBuffers>(kSolverBytes);
  ModelWorkspace* const holder = with.get();
  const auto holds_solver = [](const ModelWorkspace& idle) { return idle.solver != nullptr; };
  // Released last, and first, so that either order of the pool's lookup is tried.
  for (const bool solver_first : {true, false}) {
    if (solver_first) {
      pool.release(*entry, std::move(with));
      pool.release(*entry, std::move(without));
    } else {
      pool.release(*entry, std::move(without));
      pool.release(*entry, std::move(with));
    }
    EXPECT_EQ(pool.idle_bytes(), 2 * plain_bytes + kSolverBytes);
    EXPECT_EQ(budget.reserved(), 2 * plain_bytes + kSolverBytes);
    with = pool.acquire(*entry, {}, holds_solver);
    EXPECT_EQ(with.get(), holder);
    without = pool.acquire(*entry, {}, holds_solver);
    EXPECT_EQ(without->solver, nullptr);
  }
}

TEST(WorkspacePoolTest, ThreadsLeaseAndReturnWorkspacesWhileAModelIsDeleted) {
  const auto kept = registered("kept", 12);
  const auto deleted = registered("deleted", 8);
  // Room for a few idle workspaces, so that releases also evict.
  WorkspacePool pool(3 * ModelWorkspace(*kept->model).heap_bytes(), kNoWorkspaceLimit, plenty());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        WorkerContext worker(pool, Interruption{}, {});
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

constexpr const char* kChainUrdf = R"(<robot name="chain">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l3"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>)";

class WorkspaceBudgetTest : public ::testing::Test {
 protected:
  WorkspaceBudgetTest() {
    entry_.id = "chain-id";
    UrdfOptions options;
    options.floating_base = true;
    entry_.model = build_model(read_urdf_string(kChainUrdf, options));
  }

  const Model& model() const { return *entry_.model; }

  RegisteredModel entry_;
};

TEST_F(WorkspaceBudgetTest, AnIdleWorkspaceWithRoomIsReused) {
  WorkspacePool pool(1 << 20, workspace_bytes(model(), kAbaDerivativesWorkspaces), plenty());
  auto workspace = pool.acquire(entry_, kAbaDerivativesWorkspaces);
  workspace->data.bind(model(), kAbaDerivativesWorkspaces);
  EXPECT_EQ(workspace->heap_bytes(), workspace_bytes(model(), kAbaDerivativesWorkspaces));
  const ModelWorkspace* reused = workspace.get();
  pool.release(entry_, std::move(workspace));
  workspace = pool.acquire(entry_, kAbaWorkspaces);
  EXPECT_EQ(workspace.get(), reused);
}

// ABA's derivatives bind ABA's workspace and more: a workspace they used, given back, has no room
// under a limit that fits ABA's alone, so an ABA call gets a new workspace with only ABA's bound.
TEST_F(WorkspaceBudgetTest, AWorkspaceWithoutRoomForACallIsReplaced) {
  const std::size_t limit = workspace_bytes(model(), kAbaWorkspaces);
  ASSERT_LT(limit, workspace_bytes(model(), kAbaDerivativesWorkspaces));
  WorkspacePool pool(1 << 20, limit, plenty());
  auto workspace = std::make_unique<ModelWorkspace>(model());
  workspace->data.bind(model(), kAbaDerivativesWorkspaces);
  pool.release(entry_, std::move(workspace));
  ASSERT_EQ(pool.idle_count(), 1u);

  workspace = pool.acquire(entry_, kAbaWorkspaces);
  EXPECT_EQ(pool.idle_count(), 0u);
  EXPECT_FALSE(workspace->data.bound().contains<AbaDerivativesWorkspace>());
  EXPECT_EQ(workspace->heap_bytes_with(model(), kAbaWorkspaces), limit);
}

TEST_F(WorkspaceBudgetTest, ACallThatCannotFitIsRefusedNamingTheFlag) {
  WorkspacePool pool(1 << 20, workspace_bytes(model(), WorkspaceSet{}), plenty());
  EXPECT_NO_THROW(pool.acquire(entry_, WorkspaceSet{}));
  try {
    pool.acquire(entry_, kCrbaWorkspaces);
    FAIL() << "no WorkspaceLimitError";
  } catch (const WorkspaceLimitError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--max-workspace-bytes"));
    EXPECT_THAT(e.what(), HasSubstr("chain-id"));
    EXPECT_THAT(e.what(), HasSubstr(std::to_string(workspace_bytes(model(), kCrbaWorkspaces))));
  }
}

TEST_F(WorkspaceBudgetTest, InverseDynamicsNeedsNoEngineWorkspace) {
  EXPECT_EQ(workspace_bytes(model(), WorkspaceSet{}), ModelWorkspace(model()).heap_bytes());
  EXPECT_LT(workspace_bytes(model(), WorkspaceSet{}), workspace_bytes(model(), kAbaWorkspaces));
}

}  // namespace
}  // namespace torqued::server
