// Legnani's homogeneous-matrix Lagrangian (engine/algorithms/lagrange_homogeneous.hpp) is an
// independent derivation of the equations of motion: it must agree with RNEA and CRBA on seeded
// random trees with every joint kind, and with the Stanford-arm numbers of
// ../shared/seeds/digest-001-004.md §7.1.
//
// Tolerances are relative to max(1, max|y|). The two derivations round differently (4x4 products
// and traces against 6D spatial recursions); on trees of up to 60 links, where mass-matrix
// entries reach ~1e3, the observed differences stay below 6e-15 relative, so 1e-11 leaves
// room for other compilers and instruction sets while still catching any wrong term (a missing
// Coriolis factor or a wrong frame for L gives errors of order 1).
#include "engine/algorithms/lagrange_homogeneous.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/io/dh.hpp"
#include "engine/model/build.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/random_tree.hpp"
#include "tests/engine/support/stanford_arm.hpp"

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

constexpr double kTolerance = 1e-11;
constexpr int kStatesPerTree = 3;

class LagrangeHomogeneousTree : public ::testing::TestWithParam<TreeCase> {
 protected:
  void SetUp() override {
    RandomTreeOptions options;
    options.floating_base = GetParam().floating_base;
    options.min_links = GetParam().min_links;
    options.max_links = GetParam().max_links;
    // Gravity off the z axis, so that every column of Legnani's gravity matrix H_g is exercised.
    options.gravity = Vec3(1.3, -2.1, -9.4);
    model_ = build_model(test_support::random_tree_spec(GetParam().seed, options));
    data_ = std::make_unique<Data>(*model_);
    rng_.seed(GetParam().seed * 104729 + 3);
  }

  ModelPtr model_;
  std::unique_ptr<Data> data_;
  std::mt19937_64 rng_;
};

TEST_P(LagrangeHomogeneousTree, MassMatrixMatchesCrba) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Eigen::MatrixXd expected = crba(*model_, *data_, s.q);
    const Eigen::MatrixXd& actual = lagrange_homogeneous_mass_matrix(*model_, *data_, s.q);
    EXPECT_LE(relative_error(actual, expected), kTolerance) << "state " << k;
  }
}

TEST_P(LagrangeHomogeneousTree, InverseDynamicsMatchesRnea) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Eigen::VectorXd expected = rnea(*model_, *data_, s.q, s.v, s.a);
    const Eigen::VectorXd actual = lagrange_homogeneous(*model_, *data_, s.q, s.v, s.a);
    EXPECT_LE(relative_error(actual, expected), kTolerance) << "state " << k;
  }
}

TEST_P(LagrangeHomogeneousTree, BiasAndGravityMatchRnea) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Eigen::VectorXd g = generalized_gravity(*model_, *data_, s.q);
    const Eigen::VectorXd bias = nonlinear_effects(*model_, *data_, s.q, s.v) - g;
    EXPECT_LE(relative_error(lagrange_homogeneous_gravity(*model_, *data_, s.q), g), kTolerance)
        << "state " << k;
    EXPECT_LE(relative_error(lagrange_homogeneous_bias(*model_, *data_, s.q, s.v), bias),
              kTolerance)
        << "state " << k;
  }
}

// The four entry points describe one equation: τ = M a + C v + g. Same recursion, same rounding:
// 1e-12 relative.
TEST_P(LagrangeHomogeneousTree, PartsAddUpToInverseDynamics) {
  const RandomState s = random_state(*model_, rng_);
  const Eigen::MatrixXd mass = lagrange_homogeneous_mass_matrix(*model_, *data_, s.q);
  const Eigen::VectorXd bias = lagrange_homogeneous_bias(*model_, *data_, s.q, s.v);
  const Eigen::VectorXd g = lagrange_homogeneous_gravity(*model_, *data_, s.q);
  const Eigen::VectorXd tau = lagrange_homogeneous(*model_, *data_, s.q, s.v, s.a);
  EXPECT_LE(relative_error(mass * s.a + bias + g, tau), 1e-12);
}

std::vector<TreeCase> tree_cases() {
  std::vector<TreeCase> cases;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) cases.push_back({seed, seed % 2 == 0, 10, 60});
  cases.push_back({101, false, 60, 60});
  cases.push_back({102, true, 60, 60});
  cases.push_back({201, false, 1, 1});
  cases.push_back({202, true, 1, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, LagrangeHomogeneousTree, ::testing::ValuesIn(tree_cases()),
                         case_name);

// The Stanford arm of digest §7.1 (Legnani et al. §4's geometry). The digest prints 11
// significant digits: 2e-10 relative to the largest entry.
class StanfordArm : public ::testing::Test {
 protected:
  StanfordArm() : model_(build_model(dh_to_spec(test_support::stanford_arm()))), data_(*model_) {}

  void expect_close(const Eigen::MatrixXd& actual, const Eigen::MatrixXd& expected) {
    EXPECT_LE(relative_error(actual, expected), 2e-10) << "\nactual:\n"
                                                       << actual << "\nexpected:\n"
                                                       << expected;
  }

  ModelPtr model_;
  Data data_;
  test_support::StanfordArmCase case_;
};

TEST_F(StanfordArm, MassMatrix) {
  expect_close(lagrange_homogeneous_mass_matrix(*model_, data_, case_.q), case_.mass);
}

TEST_F(StanfordArm, InverseDynamics) {
  expect_close(lagrange_homogeneous(*model_, data_, case_.q, case_.v, case_.a), case_.tau);
}

TEST_F(StanfordArm, Gravity) {
  expect_close(lagrange_homogeneous_gravity(*model_, data_, case_.q), case_.gravity);
}

// The digest gives no bias without the external action; τ − M q̈ − g from its numbers is one.
TEST_F(StanfordArm, Bias) {
  const Eigen::VectorXd expected = case_.tau - case_.mass * case_.a - case_.gravity;
  expect_close(lagrange_homogeneous_bias(*model_, data_, case_.q, case_.v), expected);
}

}  // namespace
}  // namespace torqued
