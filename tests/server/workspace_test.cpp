// The workspace pool (server/workspace.hpp) accounts for the engine workspaces a call will bind
// before they are bound: a call never grows a workspace past --max-workspace-bytes. Byte counts
// are exact integers, compared exactly.
#include "server/workspace.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"

namespace torqued::server {
namespace {

using ::testing::HasSubstr;

constexpr const char* kChainUrdf = R"(<robot name="chain">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l3"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>)";

class WorkspacePoolTest : public ::testing::Test {
 protected:
  WorkspacePoolTest() {
    entry_.id = "chain-id";
    UrdfOptions options;
    options.floating_base = true;
    entry_.model = build_model(read_urdf_string(kChainUrdf, options));
  }

  const Model& model() const { return *entry_.model; }

  RegisteredModel entry_;
};

TEST_F(WorkspacePoolTest, AnIdleWorkspaceWithRoomIsReused) {
  WorkspacePool pool(1 << 20, workspace_bytes(model(), Algorithm::kAbaDerivatives));
  auto workspace = pool.acquire(entry_, engine_workspaces(Algorithm::kAbaDerivatives));
  workspace->data.bind(model(), engine_workspaces(Algorithm::kAbaDerivatives));
  EXPECT_EQ(workspace->heap_bytes(), workspace_bytes(model(), Algorithm::kAbaDerivatives));
  const ModelWorkspace* reused = workspace.get();
  pool.release(entry_, std::move(workspace));
  workspace = pool.acquire(entry_, engine_workspaces(Algorithm::kAba));
  EXPECT_EQ(workspace.get(), reused);
}

// ABA's derivatives bind ABA's workspace and more: a workspace they used, given back, has no room
// under a limit that fits ABA's alone, so an ABA call gets a new workspace with only ABA's bound.
TEST_F(WorkspacePoolTest, AWorkspaceWithoutRoomForACallIsReplaced) {
  const std::size_t limit = workspace_bytes(model(), Algorithm::kAba);
  ASSERT_LT(limit, workspace_bytes(model(), Algorithm::kAbaDerivatives));
  WorkspacePool pool(1 << 20, limit);
  auto workspace = std::make_unique<ModelWorkspace>(model());
  workspace->data.bind(model(), engine_workspaces(Algorithm::kAbaDerivatives));
  pool.release(entry_, std::move(workspace));
  ASSERT_EQ(pool.idle_count(), 1u);

  workspace = pool.acquire(entry_, engine_workspaces(Algorithm::kAba));
  EXPECT_EQ(pool.idle_count(), 0u);
  EXPECT_FALSE(workspace->data.aba_derivatives.has_value());
  EXPECT_EQ(workspace->heap_bytes_with(model(), engine_workspaces(Algorithm::kAba)), limit);
}

TEST_F(WorkspacePoolTest, ACallThatCannotFitIsRefusedNamingTheFlag) {
  WorkspacePool pool(1 << 20, workspace_bytes(model(), Algorithm::kRnea));
  EXPECT_NO_THROW(pool.acquire(entry_, engine_workspaces(Algorithm::kRnea)));
  try {
    pool.acquire(entry_, engine_workspaces(Algorithm::kCrba));
    FAIL() << "no WorkspaceLimitError";
  } catch (const WorkspaceLimitError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--max-workspace-bytes"));
    EXPECT_THAT(e.what(), HasSubstr("chain-id"));
    EXPECT_THAT(e.what(), HasSubstr(std::to_string(workspace_bytes(model(), Algorithm::kCrba))));
  }
}

TEST_F(WorkspacePoolTest, InverseDynamicsNeedsNoEngineWorkspace) {
  EXPECT_EQ(workspace_bytes(model(), Algorithm::kRnea), ModelWorkspace(model()).heap_bytes());
  EXPECT_LT(workspace_bytes(model(), Algorithm::kRnea), workspace_bytes(model(), Algorithm::kAba));
}

}  // namespace
}  // namespace torqued::server
