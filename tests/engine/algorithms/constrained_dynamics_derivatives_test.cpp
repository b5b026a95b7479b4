// Tests constrained_dynamics_derivatives() (engine/algorithms/constrained_dynamics_derivatives.hpp)
// against fourth-order central differences of constrained_dynamics() taken in the tangent space:
// ∂q̈/∂(q, q̇, τ) and ∂λ/∂(q, q̇, τ) for rigid contacts with the world (3D points and 6D welds, as a
// legged robot's feet), for constraints of every type between two moving bodies, with and without
// Baumgarte's gains, for the four-bar's loop closures (whose rows are partly dependent: the
// minimum-norm λ), and on solo12's four feet (3D) and talos_reduced's two soles (6D).
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/central_differences.hpp"
#include "tests/engine/support/closed_chains.hpp"
#include "tests/engine/support/random_tree.hpp"
#include "tests/engine/support/shared_models.hpp"

namespace torqued {
namespace {

// Step 1e-4 of a fourth-order difference: truncation ~h⁴, rounding ~1e-12 relative, both
// amplified by the conditioning of M and of K M⁻¹ Kᵀ (≲ 1e4 here): the derivatives agree to
// ~1e-8, and 1e-6 of the largest entry separates a correct derivative from a dropped term.
constexpr double kStep = 1e-4;
constexpr double kTolerance = 1e-6;

struct Solution {
  Eigen::VectorXd ddq, lambda;
};

Solution solve(const Model& model, Data& data, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
               const Eigen::VectorXd& tau, const std::vector<BilateralConstraint>& constraints,
               const BaumgarteGains& gains) {
  Solution s{Eigen::VectorXd(model.nv), Eigen::VectorXd(constraint_rows(model, constraints))};
  constrained_dynamics(model, data, q, v, tau, constraints, gains, s.ddq, s.lambda);
  return s;
}

struct Derivatives {
  Eigen::MatrixXd ddq_dq, ddq_dv, ddq_dtau, dlambda_dq, dlambda_dv, dlambda_dtau;
};

// Central differences of (q̈, λ) along the nv tangent directions of `moved(k, h)`.
template <typename Moved>
std::pair<Eigen::MatrixXd, Eigen::MatrixXd> finite_difference(int nv, Moved&& moved) {
  return test_support::central_differences_of_pair(nv, kStep, [&](int k, double h) {
    const Solution s = moved(k, h);
    return std::pair(s.ddq, s.lambda);
  });
}

Derivatives numeric(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                    const Eigen::VectorXd& tau, const std::vector<BilateralConstraint>& constraints,
                    const BaumgarteGains& gains) {
  Data data(model);
  const int nv = model.nv;
  const Eigen::MatrixXd unit = Eigen::MatrixXd::Identity(nv, nv);
  Derivatives d;
  std::tie(d.ddq_dq, d.dlambda_dq) = finite_difference(nv, [&](int k, double h) {
    return solve(model, data, integrate(model, q, unit.col(k) * h), v, tau, constraints, gains);
  });
  std::tie(d.ddq_dv, d.dlambda_dv) = finite_difference(nv, [&](int k, double h) {
    return solve(model, data, q, v + unit.col(k) * h, tau, constraints, gains);
  });
  std::tie(d.ddq_dtau, d.dlambda_dtau) = finite_difference(nv, [&](int k, double h) {
    return solve(model, data, q, v, tau + unit.col(k) * h, constraints, gains);
  });
  return d;
}

double relative_error(const Eigen::MatrixXd& got, const Eigen::MatrixXd& expected) {
  if (expected.size() == 0) return 0.0;
  return (got - expected).cwiseAbs().maxCoeff() / std::max(1.0, expected.cwiseAbs().maxCoeff());
}

// The analytic derivatives against the numeric ones, and q̈, λ against constrained_dynamics().
void expect_derivatives_match(const Model& model, const Eigen::VectorXd& q,
                              const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                              const std::vector<BilateralConstraint>& constraints,
                              const BaumgarteGains& gains = {}) {
  Data data(model);
  const int rows = constraint_rows(model, constraints);
  const ConstrainedDerivativesWorkspace& w =
      constrained_dynamics_derivatives(model, data, q, v, tau, constraints, gains);
  const AbaDerivativesWorkspace& a = data.workspace<AbaDerivativesWorkspace>();
  Data reference_data(model);
  const Solution reference = solve(model, reference_data, q, v, tau, constraints, gains);
  // The same solution through other factors of M (ABA's, not CRBA's LᵀDL): rounding amplified
  // by the conditioning of M and K M⁻¹ Kᵀ.
  EXPECT_LT(relative_error(data.ddq, reference.ddq), 1e-8) << "q̈";
  EXPECT_LT(relative_error(w.lambda.head(rows), reference.lambda), 1e-8) << "λ";

  const Derivatives n = numeric(model, q, v, tau, constraints, gains);
  EXPECT_LT(relative_error(a.ddq_dq, n.ddq_dq), kTolerance) << "∂q̈/∂q";
  EXPECT_LT(relative_error(a.ddq_dv, n.ddq_dv), kTolerance) << "∂q̈/∂q̇";
  EXPECT_LT(relative_error(a.ddq_dtau, n.ddq_dtau), kTolerance) << "∂q̈/∂τ";
  EXPECT_LT(relative_error(w.dlambda_dq.topRows(rows), n.dlambda_dq), kTolerance) << "∂λ/∂q";
  EXPECT_LT(relative_error(w.dlambda_dv.topRows(rows), n.dlambda_dv), kTolerance) << "∂λ/∂q̇";
  EXPECT_LT(relative_error(w.dlambda_dtau.topRows(rows), n.dlambda_dtau), kTolerance) << "∂λ/∂τ";
}

// ---- Random trees -------------------------------------------------------------------------------

struct Case {
  std::uint64_t seed;
  bool floating_base;
  bool between_bodies;  // constraints between random bodies, else contacts with the world
  bool baumgarte;
};

class ConstrainedDynamicsDerivativesTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConstrainedDynamicsDerivativesTest, MatchFiniteDifferences) {
  const Case c = GetParam();
  test_support::RandomTreeOptions options;
  options.min_links = 8;
  options.max_links = 14;
  options.floating_base = c.floating_base;
  const ModelPtr model = build_model(test_support::random_tree_spec(c.seed, options));
  std::mt19937_64 rng(c.seed);
  const test_support::RandomState state = test_support::random_state(*model, rng);
  std::vector<BilateralConstraint> constraints;
  if (c.between_bodies) {
    // Every type in turn, between two moving bodies or a body and the world.
    constraints = test_support::random_constraints(*model, rng, 8);
  } else {
    // Feet: 6D and 3D contacts with the world in turn, on the last bodies.
    constraints = test_support::random_constraints(*model, rng, 6);
    for (int k = 0; k < 6; ++k) {
      constraints[k].type = k % 2 == 0 ? ConstraintType::kWeld : ConstraintType::kPoint;
      constraints[k].body1 = std::max(1, model->nbodies() - 1 - k);
      constraints[k].body2 = 0;
    }
  }
  constraints = test_support::independent_constraints(*model, state.q, constraints);
  ASSERT_GE(constraints.size(), 2u) << "too few independent constraints to test";
  const BaumgarteGains gains = c.baumgarte ? BaumgarteGains{400.0, 40.0} : BaumgarteGains{};
  expect_derivatives_match(*model, state.q, state.v, state.tau, constraints, gains);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    out.push_back({seed, seed % 2 == 0, seed > 4, seed % 4 == 3 || seed % 4 == 0});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, ConstrainedDynamicsDerivativesTest,
                         ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return "seed" + std::to_string(c.seed) +
                                  (c.floating_base ? "_floating" : "_fixed") +
                                  (c.between_bodies ? "_between_bodies" : "_world_contacts") +
                                  (c.baumgarte ? "_baumgarte" : "");
                         });

// ---- The four-bar's loop closures
// ----------------------------------------------------------------

class FourBarDerivativesTest : public ::testing::TestWithParam<test_support::FourBarClosure> {};

TEST_P(FourBarDerivativesTest, MatchFiniteDifferences) {
  const ModelPtr model = build_model(test_support::four_bar_spec(GetParam()));
  const Eigen::VectorXd q = test_support::four_bar_pose(GetParam(), 0.5).q;
  std::mt19937_64 rng(7);
  const Eigen::VectorXd v = test_support::uniform_vector(rng, model->nv, -1.0, 1.0);
  const Eigen::VectorXd tau = test_support::uniform_vector(rng, model->nv, -1.0, 1.0);
  expect_derivatives_match(*model, q, v, tau, {});
  expect_derivatives_match(*model, q, v, tau, {}, {100.0, 20.0});
}

std::string closure_name(const ::testing::TestParamInfo<test_support::FourBarClosure>& info) {
  switch (info.param) {
    case test_support::FourBarClosure::kRevolute:
      return "revolute";
    case test_support::FourBarClosure::kPoint:
      return "point";
    case test_support::FourBarClosure::kWeld:
      break;
  }
  return "weld";
}

INSTANTIATE_TEST_SUITE_P(Closures, FourBarDerivativesTest,
                         ::testing::Values(test_support::FourBarClosure::kRevolute,
                                           test_support::FourBarClosure::kPoint,
                                           test_support::FourBarClosure::kWeld),
                         closure_name);

// ---- Legged robots in contact -------------------------------------------------------------------

// Contacts with the world at the named frames.
std::vector<BilateralConstraint> feet(const Model& model, const std::vector<std::string>& frames,
                                      ConstraintType type) {
  std::vector<BilateralConstraint> out;
  for (const std::string& name : frames) {
    const Frame& f = model.frames[model.find_frame(name)];
    BilateralConstraint c;
    c.name = name;
    c.type = type;
    c.body1 = f.body;
    c.placement1 = f.placement;
    out.push_back(c);
  }
  return out;
}

TEST(LeggedRobotDerivativesTest, Solo12FourFeetIn3dContact) {
  const std::optional<ModelPtr> model = test_support::shared_floating_model("solo12");
  if (!model) GTEST_SKIP() << "../shared/models/solo12.urdf is not checked out";
  std::mt19937_64 rng(3);
  const test_support::RandomState state = test_support::random_state(**model, rng);
  expect_derivatives_match(
      **model, state.q, state.v, state.tau,
      feet(**model, {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"}, ConstraintType::kPoint));
}

TEST(LeggedRobotDerivativesTest, TalosTwoSolesIn6dContact) {
  const std::optional<ModelPtr> model = test_support::shared_floating_model("talos_reduced");
  if (!model) GTEST_SKIP() << "../shared/models/talos_reduced.urdf is not checked out";
  std::mt19937_64 rng(4);
  const test_support::RandomState state = test_support::random_state(**model, rng);
  expect_derivatives_match(
      **model, state.q, state.v, state.tau,
      feet(**model, {"left_sole_link", "right_sole_link"}, ConstraintType::kWeld));
}

}  // namespace
}  // namespace torqued
