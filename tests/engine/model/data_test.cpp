// Data's workspaces (data.hpp): each workspace's bytes() is what its constructor allocates, a Data
// binds only what its algorithms name, and a thread that only computes inverse dynamics holds no
// nv x nv matrix: its bytes grow linearly with the model (issue 13, point 3). Byte counts are
// exact integers, so they are compared exactly.
#include "engine/model/data.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <typeinfo>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/closed_chains.hpp"
#include "tests/engine/support/random_tree.hpp"
#include "tests/engine/support/shared_models.hpp"

namespace torqued {
namespace {

LinkSpec box_link(const std::string& name) {
  LinkSpec link;
  link.name = name;
  link.inertial.mass = 2.0;
  link.inertial.inertia = Vec3(0.02, 0.03, 0.04).asDiagonal();
  return link;
}

// A humanoid-shaped tree the size of talos_reduced with a floating base (33 links, 32 revolute
// joints, nv = 38): a torso carrying `limbs` chains of `links_per_limb` links each.
ModelSpec humanoid_spec(int limbs = 4, int links_per_limb = 8) {
  ModelSpec spec;
  spec.name = "humanoid";
  spec.floating_base = true;
  spec.links.push_back(box_link("torso"));
  for (int limb = 0; limb < limbs; ++limb) {
    std::string parent = "torso";
    for (int k = 0; k < links_per_limb; ++k) {
      const std::string child = "limb" + std::to_string(limb) + "_link" + std::to_string(k);
      spec.links.push_back(box_link(child));
      JointSpec joint;
      joint.name = child + "_joint";
      joint.type = JointType::kRevolute;
      joint.parent_link = parent;
      joint.child_link = child;
      joint.origin = {Mat3::Identity(), Vec3(0.1 * limb, 0.0, -0.2)};
      joint.axis = k % 2 == 0 ? Vec3::UnitY() : Vec3::UnitX();
      spec.joints.push_back(joint);
      parent = child;
    }
  }
  return spec;
}

template <class W>
void expect_workspace_bytes_match_heap(const Model& model, std::size_t shared) {
  SCOPED_TRACE(typeid(W).name());
  const WorkspaceSet set = WorkspaceSet::of<W>();
  Data data(model);
  EXPECT_EQ(data.heap_bytes_with(model, set), Data::workspace_bytes(model, set));
  data.bind(model, set);
  EXPECT_EQ(data.heap_bytes(), Data::workspace_bytes(model, set));
  EXPECT_GT(data.heap_bytes(), shared);
}

void expect_bytes_match_heap(const Model& model) {
  const std::size_t shared = Data::workspace_bytes(model, {});
  EXPECT_EQ(Data(model).heap_bytes(), shared);
  [&]<class... Ws>(WorkspaceList<Ws...>) {
    (expect_workspace_bytes_match_heap<Ws>(model, shared), ...);
  }(Workspaces{});
  Data every(model);
  every.bind(model, kEveryWorkspace);
  EXPECT_EQ(every.heap_bytes(), Data::workspace_bytes(model, kEveryWorkspace));
  EXPECT_EQ(every.heap_bytes_with(model, kEveryWorkspace), every.heap_bytes());
}

TEST(DataTest, WorkspaceBytesAreWhatBindingAllocates) {
  for (const bool floating : {false, true}) {
    test_support::RandomTreeOptions options;
    options.min_links = 20;
    options.floating_base = floating;
    expect_bytes_match_heap(*build_model(test_support::random_tree_spec(31, options)));
  }
  // Loop closures size the constraint workspace.
  expect_bytes_match_heap(
      *build_model(test_support::four_bar_spec(test_support::FourBarClosure::kWeld)));
  expect_bytes_match_heap(*build_model(humanoid_spec()));
}

// A call's constraints grow the workspaces sized by constraint rows past the loop closures' rows:
// the server counts the growth of every workspace (W::bytes of Extents with the call's rows) before
// the call, and each workspace that grows reserves what was counted (reserve_rows) and no more.
TEST(DataTest, WorkspacesThatGrowWithConstraintRowsReserveWhatTheirBytesSay) {
  const ModelPtr model =
      build_model(test_support::four_bar_spec(test_support::FourBarClosure::kWeld));
  constexpr int kRows = 40;
  const Extents loop_closures(*model), call(*model, kRows);
  Data data(*model);
  data.bind(*model, kEveryWorkspace);
  int growing = 0;
  [&]<class... Ws>(WorkspaceList<Ws...>) {
    const auto check = [&]<class W>(W& workspace) {
      SCOPED_TRACE(typeid(W).name());
      if (W::bytes(call) == W::bytes(loop_closures)) return;
      ++growing;
      if constexpr (requires { workspace.reserve_rows(*model, kRows); }) {
        const std::size_t before = data.heap_bytes();
        workspace.reserve_rows(*model, kRows);
        EXPECT_EQ(data.heap_bytes() - before, W::bytes(call) - W::bytes(loop_closures));
      } else {
        ADD_FAILURE() << "grows with constraint rows but has no reserve_rows";
      }
    };
    (check(data.workspace<Ws>()), ...);
  }(Workspaces{});
  EXPECT_GE(growing, 2);
}

TEST(DataTest, BindingTwiceKeepsTheBoundWorkspace) {
  const ModelPtr model = build_model(humanoid_spec());
  Data data(*model);
  data.bind(*model, kAbaWorkspaces);
  const Mat6* inertias = data.workspace<ArticulatedBodyWorkspace>().Ia.data();
  data.bind(*model, kAbaWorkspaces | WorkspaceSet::of<CentroidalWorkspace>());
  EXPECT_EQ(data.workspace<ArticulatedBodyWorkspace>().Ia.data(), inertias);
  EXPECT_TRUE(data.bound().contains<CentroidalWorkspace>());
  EXPECT_FALSE(data.bound().contains<MassMatrixWorkspace>());
}

// RNEA on a fresh Data binds nothing: every workspace stays empty and the bytes are the shared
// O(n) buffers alone.
void expect_inverse_dynamics_binds_nothing(const Model& model) {
  Data data(model);
  std::mt19937_64 rng(5);
  const Eigen::VectorXd q = random_configuration(model, rng);
  const Eigen::VectorXd v = Eigen::VectorXd::Constant(model.nv, 0.3);
  rnea(model, data, q, v, v);
  EXPECT_EQ(data.bound(), WorkspaceSet{});
  EXPECT_EQ(data.heap_bytes(), Data::workspace_bytes(model, {}));
}

TEST(DataTest, InverseDynamicsAloneHoldsNoSquareMatrix) {
  const ModelPtr model = build_model(humanoid_spec());
  ASSERT_EQ(model->nv, 38);
  expect_inverse_dynamics_binds_nothing(*model);
  // Linear: the limbs' bytes double with the limbs (the torso's and the world's stay), where an
  // nv x nv matrix would quadruple.
  const std::size_t torso = Data::workspace_bytes(*build_model(humanoid_spec(0)), {});
  const std::size_t bytes = Data::workspace_bytes(*model, {});
  const std::size_t doubled = Data::workspace_bytes(*build_model(humanoid_spec(8)), {});
  EXPECT_EQ(doubled - torso, 2 * (bytes - torso));
  // At 16 limbs of 32 links (nv = 518), all of it is less than one nv x nv matrix.
  const ModelPtr large = build_model(humanoid_spec(16, 32));
  expect_inverse_dynamics_binds_nothing(*large);
  const std::size_t square = static_cast<std::size_t>(large->nv) * large->nv * sizeof(double);
  EXPECT_LT(Data::workspace_bytes(*large, {}), square);
}

TEST(DataTest, TalosReducedWorkspaceBytes) {
  const std::optional<ModelPtr> talos = test_support::shared_floating_model("talos_reduced");
  if (!talos) GTEST_SKIP() << "the shared reference material is not checked out";
  const ModelPtr& model = *talos;
  expect_inverse_dynamics_binds_nothing(*model);
  expect_bytes_match_heap(*model);
  std::printf(
      "talos_reduced (nv = %d) workspace bytes: RNEA only %zu, ABA only %zu, every "
      "algorithm %zu\n",
      model->nv, Data::workspace_bytes(*model, {}), Data::workspace_bytes(*model, kAbaWorkspaces),
      Data::workspace_bytes(*model, kEveryWorkspace));
}

#ifndef NDEBUG
TEST(DataDeathTest, AlgorithmsRefuseAnotherModelsDataInDebugBuilds) {
  const ModelPtr model = build_model(humanoid_spec());
  const ModelPtr other = build_model(humanoid_spec(2));
  Data data(*other);
  std::mt19937_64 rng(5);
  const Eigen::VectorXd q = random_configuration(*model, rng);
  const Eigen::VectorXd v = Eigen::VectorXd::Zero(model->nv);
  EXPECT_DEATH(rnea(*model, data, q, v, v), "fits");
  Data right(*model);
  EXPECT_DEATH(aba(*model, right, q, v, Eigen::VectorXd::Zero(model->nv + 1)), "fits");
}
#endif

}  // namespace
}  // namespace torqued
