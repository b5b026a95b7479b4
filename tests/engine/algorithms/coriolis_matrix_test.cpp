// The Coriolis matrix (engine/algorithms/coriolis_matrix.hpp) on seeded random trees with every
// joint kind: C(q, v) v is the velocity part of the equations of motion, and Ṁ − 2C is
// skew-symmetric, with Ṁ from central differences of CRBA along q(t) = q ⊕ v t.
#include "engine/algorithms/coriolis_matrix.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

using test_support::max_abs;
using test_support::TreeCase;
std::string case_name(const ::testing::TestParamInfo<TreeCase>& info) {
  return test_support::tree_case_name(info.param);
}

using test_support::random_state;
using test_support::RandomState;
using test_support::RandomTreeOptions;

constexpr int kStatesPerTree = 3;

class CoriolisMatrixTree : public ::testing::TestWithParam<TreeCase> {
 protected:
  void SetUp() override {
    RandomTreeOptions options;
    options.floating_base = GetParam().floating_base;
    options.min_links = GetParam().min_links;
    options.max_links = GetParam().max_links;
    model_ = build_model(test_support::random_tree_spec(GetParam().seed, options));
    data_ = std::make_unique<Data>(*model_);
    rng_.seed(GetParam().seed * 7717 + 5);
  }

  ModelPtr model_;
  std::unique_ptr<Data> data_;
  std::mt19937_64 rng_;
};

// C v = nonlinear_effects − gravity. Both are exact recursions over the same spatial quantities
// summed in different orders; observed differences are below 5e-15 relative to max(1, max|y|),
// and 1e-12 leaves room for deeper trees and other instruction sets.
TEST_P(CoriolisMatrixTree, TimesVelocityIsTheVelocityTerm) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Eigen::VectorXd g = generalized_gravity(*model_, *data_, s.q);
    const Eigen::VectorXd expected = nonlinear_effects(*model_, *data_, s.q, s.v) - g;
    const Eigen::VectorXd actual = coriolis_matrix(*model_, *data_, s.q, s.v) * s.v;
    EXPECT_LE(max_abs(actual - expected) / std::max(1.0, max_abs(expected)), 1e-12)
        << "state " << k;
  }
}

// Ṁ − 2C is skew-symmetric, i.e. C + Cᵀ = Ṁ. Ṁ by central differences with step h = 1e-5:
// truncation h² |d³M/dt³| / 6 dominates (it scales as h²: 5e-8 relative at h = 1e-4, 5e-6 at
// 1e-3) and is ~5e-10 relative to max(1, max|Ṁ|, max|M|) at h = 1e-5, where the roundoff
// ε max|M| / h is ~1e-11. Bar 1e-7: a wrong term in C gives errors of order 1.
TEST_P(CoriolisMatrixTree, MassMatrixDerivativeMinusTwiceCIsSkew) {
  constexpr double kStep = 1e-5;
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(*model_, rng_);
    const Eigen::MatrixXd m_plus = crba(*model_, *data_, integrate(*model_, s.q, kStep * s.v));
    const Eigen::MatrixXd m_minus = crba(*model_, *data_, integrate(*model_, s.q, -kStep * s.v));
    const Eigen::MatrixXd m = crba(*model_, *data_, s.q);
    const Eigen::MatrixXd m_dot = (m_plus - m_minus) / (2.0 * kStep);
    const Eigen::MatrixXd c = coriolis_matrix(*model_, *data_, s.q, s.v);
    const Eigen::MatrixXd n = m_dot - 2.0 * c;
    const double scale = std::max({1.0, max_abs(m_dot), max_abs(m)});
    EXPECT_LE(max_abs(n + n.transpose()) / scale, 1e-7) << "state " << k;
  }
}

// C is not symmetric in general: a check that the skew test above is not vacuous.
TEST_P(CoriolisMatrixTree, IsNotSymmetric) {
  if (model_->nv < 2) GTEST_SKIP() << "fewer than two degrees of freedom";
  const RandomState s = random_state(*model_, rng_);
  const Eigen::MatrixXd c = coriolis_matrix(*model_, *data_, s.q, s.v);
  EXPECT_GT(max_abs(c - c.transpose()), 1e-6 * std::max(1.0, max_abs(c)));
}

// At rest C vanishes: every entry is linear in v.
TEST_P(CoriolisMatrixTree, VanishesAtRest) {
  const RandomState s = random_state(*model_, rng_);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model_->nv);
  EXPECT_EQ(max_abs(coriolis_matrix(*model_, *data_, s.q, zero)), 0.0);
}

std::vector<TreeCase> tree_cases() {
  std::vector<TreeCase> cases;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) cases.push_back({seed, seed % 2 == 1, 10, 30});
  cases.push_back({101, true, 60, 60});
  cases.push_back({201, false, 2, 2});
  cases.push_back({202, true, 1, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, CoriolisMatrixTree, ::testing::ValuesIn(tree_cases()),
                         case_name);

}  // namespace
}  // namespace torqued
