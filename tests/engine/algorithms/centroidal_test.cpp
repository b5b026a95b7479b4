// Centre of mass and centroidal momentum (engine/algorithms/centroidal.hpp) on seeded random
// trees with every joint kind: against sums over the bodies written out here from the frame
// placements and velocities, and against central finite differences along q ⊕ v t.
#include "engine/algorithms/centroidal.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>

#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

using test_support::relative_error;
using test_support::TreeCase;
std::string case_name(const ::testing::TestParamInfo<TreeCase>& info) {
  return test_support::tree_case_name(info.param);
}

using test_support::random_state;
using test_support::RandomState;
using test_support::RandomTreeOptions;

constexpr int kStatesPerTree = 3;
// Sums of the same terms in another order or through composite inertias: observed differences
// stay below 1e-14 relative to max(1, max|y|).
constexpr double kSumTolerance = 1e-12;
// Central differences with step h = 1e-5 on positions of size ~10 m: truncation h² |d³c|/6 and
// roundoff ε |c| / h are ~1e-10 (observed up to 1.5e-10); bar 1e-8.
constexpr double kStep = 1e-5;
constexpr double kDifferenceTolerance = 1e-8;

class CentroidalTree : public ::testing::TestWithParam<TreeCase> {
 protected:
  void SetUp() override {
    RandomTreeOptions options;
    options.floating_base = GetParam().floating_base;
    options.min_links = GetParam().min_links;
    options.max_links = GetParam().max_links;
    model_ = build_model(test_support::random_tree_spec(GetParam().seed, options));
    data_ = std::make_unique<Data>(*model_);
    check_data_ = std::make_unique<Data>(*model_);
    rng_.seed(GetParam().seed * 6151 + 11);
    for (int i = 1; i < model_->nbodies(); ++i) mass_ += model_->inertias[i].mass;
  }

  // The body sums, from forward kinematics in a separate Data: world centres of mass c_i, their
  // velocities ċ_i and the angular velocities ω_i.
  struct Bodies {
    std::vector<Vec3> c, c_dot, omega;
  };
  Bodies bodies(const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
    forward_kinematics(*model_, *check_data_, q, v);
    Bodies b;
    for (int i = 1; i < model_->nbodies(); ++i) {
      const Transform& oMi = check_data_->oMi[i];
      const Motion& vi = check_data_->v[i];  // body frame
      const Vec3 com = model_->inertias[i].com();
      b.c.push_back(oMi.act(com));
      b.c_dot.push_back(oMi.rotation * (vi.linear + vi.angular.cross(com)));
      b.omega.push_back(oMi.rotation * vi.angular);
    }
    return b;
  }

  ModelPtr model_;
  std::unique_ptr<Data> data_;
  std::unique_ptr<Data> check_data_;
  std::mt19937_64 rng_;
  double mass_ = 0.0;
};

// c = Σ m_i c_i / m and ċ = Σ m_i ċ_i / m.
TEST_P(CentroidalTree, CenterOfMassIsTheMassWeightedMean) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Bodies b = bodies(s.q, s.v);
    Vec3 c = Vec3::Zero(), c_dot = Vec3::Zero();
    for (int i = 1; i < model_->nbodies(); ++i) {
      c += model_->inertias[i].mass * b.c[i - 1] / mass_;
      c_dot += model_->inertias[i].mass * b.c_dot[i - 1] / mass_;
    }
    EXPECT_LE(relative_error(center_of_mass(*model_, *data_, s.q), c), kSumTolerance);
    center_of_mass(*model_, *data_, s.q, s.v);
    EXPECT_LE(relative_error(data_->workspace<CentroidalWorkspace>().com, c), kSumTolerance);
    EXPECT_LE(relative_error(data_->workspace<CentroidalWorkspace>().vcom, c_dot), kSumTolerance);
  }
}

// ċ by central differences of c along q ⊕ v t, and J_c v = ċ.
TEST_P(CentroidalTree, VelocityAndJacobianMatchFiniteDifferences) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Vec3 plus = center_of_mass(*model_, *data_, integrate(*model_, s.q, kStep * s.v));
    const Vec3 minus = center_of_mass(*model_, *data_, integrate(*model_, s.q, -kStep * s.v));
    const Vec3 difference = (plus - minus) / (2.0 * kStep);
    center_of_mass(*model_, *data_, s.q, s.v);
    EXPECT_LE(relative_error(data_->workspace<CentroidalWorkspace>().vcom, difference),
              kDifferenceTolerance)
        << "state " << k;

    const Eigen::MatrixXd jacobian = center_of_mass_jacobian(*model_, *data_, s.q);
    ASSERT_EQ(jacobian.cols(), model_->nv);
    EXPECT_LE(relative_error(jacobian * s.v, data_->workspace<CentroidalWorkspace>().vcom),
              kSumTolerance)
        << "state " << k;
    // Column by column: unit velocities.
    Eigen::MatrixXd columns(3, model_->nv);
    for (int j = 0; j < model_->nv; ++j) {
      const Eigen::VectorXd e = Eigen::VectorXd::Unit(model_->nv, j);
      // Copies: center_of_mass() returns a reference to data.workspace<CentroidalWorkspace>().com,
      // which the next call changes.
      const Vec3 up = center_of_mass(*model_, *data_, integrate(*model_, s.q, kStep * e));
      const Vec3 down = center_of_mass(*model_, *data_, integrate(*model_, s.q, -kStep * e));
      columns.col(j) = (up - down) / (2.0 * kStep);
    }
    EXPECT_LE(relative_error(jacobian, columns), kDifferenceTolerance) << "state " << k;
  }
}

// h_G = (Σ m_i ċ_i, Σ [I_i ω_i + m_i (c_i − c) × ċ_i]) with I_i the world-frame inertia about c_i,
// and A_G v = h_G; the linear rows of A_G are m J_c.
TEST_P(CentroidalTree, MomentumIsTheSumOverBodies) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Bodies b = bodies(s.q, s.v);
    const Vec3 c = center_of_mass(*model_, *data_, s.q);
    Vec3 linear = Vec3::Zero(), angular = Vec3::Zero();
    for (int i = 1; i < model_->nbodies(); ++i) {
      const RigidInertia& inertia = model_->inertias[i];
      const Mat3& r = check_data_->oMi[i].rotation;
      linear += inertia.mass * b.c_dot[i - 1];
      angular += r * inertia.inertia_about_com() * r.transpose() * b.omega[i - 1] +
                 inertia.mass * (b.c[i - 1] - c).cross(b.c_dot[i - 1]);
    }
    Vec6 expected;
    expected << linear, angular;
    const Force& hg = centroidal_momentum(*model_, *data_, s.q, s.v);
    EXPECT_LE(relative_error(hg.to_vector(), expected), kSumTolerance) << "state " << k;

    const Eigen::MatrixXd ag = centroidal_momentum_matrix(*model_, *data_, s.q);
    ASSERT_EQ(ag.cols(), model_->nv);
    EXPECT_LE(relative_error(ag * s.v, expected), kSumTolerance) << "state " << k;
    const Eigen::MatrixXd jacobian = center_of_mass_jacobian(*model_, *data_, s.q);
    EXPECT_LE(relative_error(ag.topRows<3>(), mass_ * jacobian), kSumTolerance) << "state " << k;
  }
}

std::vector<TreeCase> tree_cases() {
  std::vector<TreeCase> cases;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) cases.push_back({seed, seed % 2 == 0, 10, 40});
  cases.push_back({101, true, 60, 60});
  cases.push_back({201, false, 2, 2});  // a single moving body
  cases.push_back({202, true, 1, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, CentroidalTree, ::testing::ValuesIn(tree_cases()), case_name);

}  // namespace
}  // namespace torqued
