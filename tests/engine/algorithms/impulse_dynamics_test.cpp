// Tests the impulse dynamics of a touchdown (engine/algorithms/impulse_dynamics.hpp) and its
// derivatives (impulse_dynamics_derivatives.hpp) on random floating-base trees with every joint
// kind, a weld and a point contact with the world, and on the four-bar's loop closures:
// - against the dense KKT system [M Kᵀ; K 0] [v⁺; −Λ] = [M v⁻; −e K v⁻] solved by LU;
// - the contact velocities after it, −e K v⁻ (at rest after a plastic impact);
// - the kinetic energy: an impact with e < 1 loses some, an elastic one (e = 1) of bilateral
//   contacts keeps it (v⁻ reflected in the metric of M);
// - without contacts, v⁺ = v⁻;
// - one sticking point contact: the same v⁺ as the unilateral Poisson impact of impact.hpp;
// - ∂v⁺/∂(q, v⁻) and ∂Λ/∂(q, v⁻) against fourth-order central differences of impulse_dynamics()
//   in the tangent space.
#include "engine/algorithms/impulse_dynamics.hpp"

#include <gtest/gtest.h>

#include <Eigen/LU>
#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/impact.hpp"
#include "engine/algorithms/impulse_dynamics_derivatives.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/central_differences.hpp"
#include "tests/engine/support/closed_chains.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

struct Touchdown {
  ModelPtr model;
  Eigen::VectorXd q, v;
  std::vector<BilateralConstraint> contacts;
};

Touchdown touchdown(std::uint64_t seed) {
  test_support::RandomTreeOptions options;
  options.min_links = 6;
  options.max_links = 12;
  options.floating_base = true;
  Touchdown t;
  t.model = build_model(test_support::random_tree_spec(seed, options));
  const Model& model = *t.model;
  std::mt19937_64 rng(seed);
  const test_support::RandomState state = test_support::random_state(model, rng);
  t.q = state.q;
  t.v = 3.0 * state.v;
  t.contacts = test_support::random_feet(model, rng, t.q);
  return t;
}

class ImpulseDynamicsTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ImpulseDynamicsTest, SolvesTheKktSystemOfTheImpact) {
  const Touchdown t = touchdown(GetParam());
  const Model& model = *t.model;
  const int nv = model.nv;
  Data data(model);
  const int m = constraint_rows(model, t.contacts);
  ASSERT_GT(m, 0);
  for (const double restitution : {0.0, 0.4, 1.0}) {
    Eigen::VectorXd v_plus(nv), impulses(m);
    const ConstraintResidual residual =
        impulse_dynamics(model, data, t.q, t.v, t.contacts, restitution, {}, v_plus, impulses);
    const Eigen::MatrixXd jacobian = data.workspace<ConstraintWorkspace>().jacobian.topRows(m);
    const Eigen::MatrixXd mass = crba(model, data, t.q).selfadjointView<Eigen::Lower>();
    Eigen::MatrixXd kkt = Eigen::MatrixXd::Zero(nv + m, nv + m);
    kkt.topLeftCorner(nv, nv) = mass;
    kkt.topRightCorner(nv, m) = jacobian.transpose();
    kkt.bottomLeftCorner(m, nv) = jacobian;
    Eigen::VectorXd rhs(nv + m);
    rhs << mass * t.v, -restitution * (jacobian * t.v);
    const Eigen::VectorXd solution = kkt.partialPivLu().solve(rhs);
    const double velocity_scale = 1.0 + t.v.cwiseAbs().maxCoeff();
    // κ(KKT) up to ~1e6 on these trees: 1e-9 of the velocities.
    EXPECT_LT((v_plus - solution.head(nv)).cwiseAbs().maxCoeff(), 1e-9 * velocity_scale)
        << "e = " << restitution;
    EXPECT_LT((impulses + solution.tail(m)).cwiseAbs().maxCoeff(),
              1e-9 * (1.0 + solution.tail(m).cwiseAbs().maxCoeff()))
        << "e = " << restitution;
    EXPECT_LT(residual.residual, 1e-12 * velocity_scale) << "e = " << restitution;
    const Eigen::VectorXd contact_velocity = jacobian * v_plus;
    EXPECT_LT((contact_velocity + restitution * (jacobian * t.v)).cwiseAbs().maxCoeff(),
              1e-10 * velocity_scale)
        << "e = " << restitution;

    const double before = 0.5 * t.v.dot(mass * t.v), after = 0.5 * v_plus.dot(mass * v_plus);
    if (restitution == 1.0) {
      EXPECT_NEAR(after, before, 1e-10 * before) << "an elastic impact keeps the energy";
    } else {
      EXPECT_LT(after, before) << "e = " << restitution;
    }
  }
}

TEST_P(ImpulseDynamicsTest, WithoutContactsTheVelocityIsUnchanged) {
  const Touchdown t = touchdown(GetParam());
  const Model& model = *t.model;
  Data data(model);
  Eigen::VectorXd v_plus(model.nv), impulses(0);
  impulse_dynamics(model, data, t.q, t.v, {}, 0.0, {}, v_plus, impulses);
  EXPECT_EQ(v_plus, t.v);
}

// One point contact with the world, approaching, with a friction coefficient that keeps it
// sticking: Poisson's impact (compression impulse scaled by 1 + e, no decompression impulse while
// the contact separates) and the bilateral impulse with K v⁺ = −e K v⁻ are the same impact.
TEST_P(ImpulseDynamicsTest, OneStickingContactIsTheUnilateralImpact) {
  const Touchdown t = touchdown(GetParam());
  const Model& model = *t.model;
  const int body = model.nbodies() - 1;
  const Vec3 point(0.05, -0.02, 0.1);
  BilateralConstraint bilateral;
  bilateral.type = ConstraintType::kPoint;
  bilateral.body1 = body;
  bilateral.placement1.translation = point;
  const std::vector<BilateralConstraint> contacts{bilateral};
  Data data(model);
  ContactWorkspace ws(model, 1);
  Eigen::VectorXd v_plus(model.nv), impulses(3);
  impulse_dynamics(model, data, t.q, t.v, contacts, 0.0, {}, v_plus, impulses);
  // The contact's normal: against the point's velocity before, so that it approaches.
  const Eigen::MatrixXd jacobian = data.workspace<ConstraintWorkspace>().jacobian.topRows(3);
  const Mat3 to_world = data.oMi[body].rotation;
  const Vec3 normal = -(to_world * (jacobian * t.v)).normalized();
  for (const double restitution : {0.0, 0.5}) {
    impulse_dynamics(model, data, t.q, t.v, contacts, restitution, {}, v_plus, impulses);
    const Vec3 impulse = to_world * impulses.head<3>();
    const double normal_impulse = impulse.dot(normal);
    ASSERT_GT(normal_impulse, 0.0) << "a sticking impact presses";
    const double friction = 2.0 * (impulse - normal_impulse * normal).norm() / normal_impulse + 1.0;
    const std::vector<PointContact> unilateral{{body, point, normal, friction}};
    const ComplementarityResult result = impact(model, data, ws, t.q, t.v, unilateral, restitution);
    ASSERT_EQ(result.status, ComplementarityStatus::kSolved);
    EXPECT_LT((ws.velocity - v_plus).cwiseAbs().maxCoeff(),
              1e-12 * (1.0 + t.v.cwiseAbs().maxCoeff()))
        << "e = " << restitution;
  }
}

// ---- Derivatives --------------------------------------------------------------------------------

// Step 1e-4 of a fourth-order difference: truncation ~h⁴, rounding ~1e-12 relative, both
// amplified by the conditioning of M and of K M⁻¹ Kᵀ: 1e-6 of the largest entry separates a
// correct derivative from a dropped term.
constexpr double kStep = 1e-4;
constexpr double kTolerance = 1e-6;

struct Impulse {
  Eigen::VectorXd v_plus, impulses;
};

// Central differences of (v⁺, Λ) along the nv tangent directions of `moved(k, h)`.
template <typename Moved>
std::pair<Eigen::MatrixXd, Eigen::MatrixXd> finite_difference(int nv, Moved&& moved) {
  return test_support::central_differences_of_pair(nv, kStep, [&](int k, double h) {
    const Impulse s = moved(k, h);
    return std::pair(s.v_plus, s.impulses);
  });
}

double relative_error(const Eigen::MatrixXd& got, const Eigen::MatrixXd& expected) {
  if (expected.size() == 0) return 0.0;
  return (got - expected).cwiseAbs().maxCoeff() / std::max(1.0, expected.cwiseAbs().maxCoeff());
}

void expect_derivatives_match(const Model& model, const Eigen::VectorXd& q,
                              const Eigen::VectorXd& v,
                              const std::vector<BilateralConstraint>& contacts,
                              double restitution) {
  SCOPED_TRACE("e = " + std::to_string(restitution));
  const int nv = model.nv;
  const int rows = constraint_rows(model, contacts);
  Data data(model);
  const auto solve = [&](const Eigen::VectorXd& qx, const Eigen::VectorXd& vx) {
    Impulse out{Eigen::VectorXd(nv), Eigen::VectorXd(rows)};
    impulse_dynamics(model, data, qx, vx, contacts, restitution, {}, out.v_plus, out.impulses);
    return out;
  };
  const Impulse reference = solve(q, v);
  const Eigen::MatrixXd unit = Eigen::MatrixXd::Identity(nv, nv);
  const auto [dv_dq, dimpulses_dq] = finite_difference(
      nv, [&](int k, double h) { return solve(integrate(model, q, unit.col(k) * h), v); });
  const auto [dv_dv, dimpulses_dv] =
      finite_difference(nv, [&](int k, double h) { return solve(q, v + unit.col(k) * h); });

  Data analytic_data(model);
  const ImpulseDerivativesWorkspace& w =
      impulse_dynamics_derivatives(model, analytic_data, q, v, contacts, restitution);
  // The same impact through M⁻¹ rather than M's LᵀDL factors.
  EXPECT_LT(relative_error(w.velocity, reference.v_plus), 1e-9) << "v⁺";
  EXPECT_LT(relative_error(w.impulses.head(rows), reference.impulses), 1e-9) << "Λ";
  EXPECT_LT(relative_error(w.dvelocity_dq, dv_dq), kTolerance) << "∂v⁺/∂q";
  EXPECT_LT(relative_error(w.dvelocity_dv, dv_dv), kTolerance) << "∂v⁺/∂v⁻";
  EXPECT_LT(relative_error(w.dimpulses_dq.topRows(rows), dimpulses_dq), kTolerance) << "∂Λ/∂q";
  EXPECT_LT(relative_error(w.dimpulses_dv.topRows(rows), dimpulses_dv), kTolerance) << "∂Λ/∂v⁻";
}

TEST_P(ImpulseDynamicsTest, DerivativesMatchFiniteDifferences) {
  const Touchdown t = touchdown(GetParam());
  for (const double restitution : {0.0, 0.7}) {
    expect_derivatives_match(*t.model, t.q, t.v, t.contacts, restitution);
  }
}

TEST_P(ImpulseDynamicsTest, DerivativesBetweenMovingBodiesMatchFiniteDifferences) {
  const Touchdown t = touchdown(GetParam());
  const Model& model = *t.model;
  std::mt19937_64 rng(GetParam() + 100);
  const std::vector<BilateralConstraint> constraints = test_support::independent_constraints(
      model, t.q, test_support::random_constraints(model, rng, 6));
  ASSERT_FALSE(constraints.empty());
  expect_derivatives_match(model, t.q, t.v, constraints, 0.0);
}

TEST(ImpulseDynamicsLoopTest, FourBarClosuresMatchFiniteDifferences) {
  for (const test_support::FourBarClosure closure :
       {test_support::FourBarClosure::kRevolute, test_support::FourBarClosure::kPoint,
        test_support::FourBarClosure::kWeld}) {
    const ModelPtr model = build_model(test_support::four_bar_spec(closure));
    const Eigen::VectorXd q = test_support::four_bar_pose(closure, 0.5).q;
    std::mt19937_64 rng(7);
    const Eigen::VectorXd v = test_support::uniform_vector(rng, model->nv, -1.0, 1.0);
    expect_derivatives_match(*model, q, v, {}, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, ImpulseDynamicsTest, ::testing::Values(1, 2, 3, 4, 5, 6),
                         [](const ::testing::TestParamInfo<std::uint64_t>& info) {
                           return "seed" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace torqued
