// Bilateral constraints and closed loops: the constraint Jacobian and bias (constraint_jacobian),
// constrained forward dynamics (constrained_dynamics) and closed-chain inverse dynamics, against
//  - independent one-DOF Lagrangian models of a four-bar and a slider-crank (closed-form loop
//    solutions, kinetic and potential energy in the crank angle, tests/engine/support/
//    closed_chains.hpp), whatever the loop joint (point, revolute, prismatic, redundant weld);
//  - the slider-crank numbers of digest-001-004.md §7.2 (Legnani et al.'s velocity matrix A,
//    the acceleration bias b and the accelerations for a given crank acceleration);
//  - dense pseudo-inverse solutions and central finite differences on random trees;
//  - the same two-arm grasp modelled two ways (Rodriguez & Kreutz 1988, Part II).
// The Pinocchio reference (../shared/golden) is checked in golden_test.cpp.
#include "engine/algorithms/constrained_dynamics.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/QR>
#include <cmath>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/closed_chains.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/random_tree.hpp"
#include "tests/engine/support/stanford_arm.hpp"

namespace torqued {
namespace {

using test_support::FourBarClosure;
using test_support::PlanarPose;
using test_support::relative_error;
using test_support::SliderCrankClosure;

// ---- The one-DOF Lagrangian model -------------------------------------------------------------

// The closed-chain motion through a crank state (φ, φ̇) with tree forces τ, from Lagrange's
// equation in φ: T = ½ m(φ) φ̇², m = Σ m_i |ṗ_i/φ̇|² + I_i (ψ̇_i/φ̇)², so
//   m φ̈ + ½ m'(φ) φ̇² + V'(φ) = Q,   Q = Σ τ_j q_j'(φ),
// with the kinematic coefficients p', p'', ψ', ψ'', q', q'' of the closed-form pose from
// five-point central differences (h = 1e-3: truncation ~h⁴ ≈ 1e-12, rounding ~ε/h² ≈ 1e-10 on the
// second derivatives). Returns q̇ = q' φ̇ and q̈ = q' φ̈ + q'' φ̇².
struct PlanarMotion {
  Eigen::VectorXd q, v, ddq;
  double ddphi;
};

PlanarMotion lagrangian_motion(const std::function<PlanarPose(double)>& pose, double phi,
                               double dphi, const Eigen::VectorXd& tau,
                               const double* given_ddphi = nullptr) {
  constexpr double h = 1e-3;
  std::vector<PlanarPose> p;
  for (int k = -2; k <= 2; ++k) p.push_back(pose(phi + k * h));
  // Evaluated into the sample's own type: an Eigen expression would outlive its operands.
  const auto d1 = [&](auto f) -> decltype(f(p[0])) {
    return (f(p[0]) - 8.0 * f(p[1]) + 8.0 * f(p[3]) - f(p[4])) / (12.0 * h);
  };
  const auto d2 = [&](auto f) -> decltype(f(p[0])) {
    return (-f(p[0]) + 16.0 * f(p[1]) - 30.0 * f(p[2]) + 16.0 * f(p[3]) - f(p[4])) / (12.0 * h * h);
  };
  double mass = 0.0, half_dmass = 0.0, dpotential = 0.0;
  for (std::size_t i = 0; i < p[2].mass.size(); ++i) {
    const Eigen::Vector2d dp = d1([i](const PlanarPose& x) { return Eigen::Vector2d(x.com[i]); });
    const Eigen::Vector2d ddp = d2([i](const PlanarPose& x) { return Eigen::Vector2d(x.com[i]); });
    const double dpsi = d1([i](const PlanarPose& x) { return x.angle[i]; });
    const double ddpsi = d2([i](const PlanarPose& x) { return x.angle[i]; });
    mass += p[2].mass[i] * dp.squaredNorm() + p[2].inertia[i] * dpsi * dpsi;
    half_dmass += p[2].mass[i] * dp.dot(ddp) + p[2].inertia[i] * dpsi * ddpsi;
    dpotential += p[2].mass[i] * test_support::kPlanarGravity * dp.y();
  }
  const Eigen::VectorXd dq = d1([](const PlanarPose& x) { return Eigen::VectorXd(x.q); });
  const Eigen::VectorXd ddq_dphi2 = d2([](const PlanarPose& x) { return Eigen::VectorXd(x.q); });
  PlanarMotion motion;
  motion.q = p[2].q;
  motion.v = dq * dphi;
  motion.ddphi = given_ddphi != nullptr
                     ? *given_ddphi
                     : (tau.dot(dq) - half_dmass * dphi * dphi - dpotential) / mass;
  motion.ddq = dq * motion.ddphi + ddq_dphi2 * dphi * dphi;
  return motion;
}

// The crank torque that gives the crank acceleration `ddphi` when the other joints are free.
double lagrangian_crank_torque(const std::function<PlanarPose(double)>& pose, double phi,
                               double dphi, double ddphi, int nv) {
  // Q is linear in τ_crank (q'_crank = 1): two evaluations give it.
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(nv);
  const double free_ddphi = lagrangian_motion(pose, phi, dphi, tau).ddphi;
  tau[0] = 1.0;
  const double unit_ddphi = lagrangian_motion(pose, phi, dphi, tau).ddphi;
  return (ddphi - free_ddphi) / (unit_ddphi - free_ddphi);
}

double max_abs(const Eigen::MatrixXd& x) { return test_support::max_abs(x); }

// Solves with dense linear algebra: M by CRBA, λ = (K M⁻¹ Kᵀ)⁺ (k − K M⁻¹ (τ − C)) with a
// complete orthogonal decomposition, q̈ = M⁻¹ (τ − C + Kᵀ λ).
struct DenseSolution {
  Eigen::VectorXd ddq, lambda;
};

DenseSolution dense_constrained_dynamics(const Model& model, const Eigen::VectorXd& q,
                                         const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                                         std::span<const BilateralConstraint> constraints,
                                         const BaumgarteGains& gains) {
  Data data(model);
  const int m = constraint_rows(model, constraints);
  Eigen::MatrixXd jacobian(m, model.nv);
  Eigen::VectorXd bias(m);
  constraint_jacobian(model, data, q, v, constraints, gains, jacobian, bias);
  const Eigen::VectorXd nle = nonlinear_effects(model, data, q, v);
  const Eigen::MatrixXd mass = crba(model, data, q);
  const Eigen::MatrixXd minv = mass.inverse();
  const Eigen::VectorXd free = minv * (tau - nle);
  const Eigen::MatrixXd system = jacobian * minv * jacobian.transpose();
  Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(system);
  cod.setThreshold(1e-10);
  DenseSolution s;
  s.lambda = cod.solve(bias - jacobian * free);
  s.ddq = free + minv * jacobian.transpose() * s.lambda;
  return s;
}

struct Solution {
  Eigen::VectorXd ddq, lambda;
  Eigen::MatrixXd jacobian;
  Eigen::VectorXd bias;
};

Solution solve(const Model& model, Data& data, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
               const Eigen::VectorXd& tau, std::span<const BilateralConstraint> constraints = {},
               const BaumgarteGains& gains = {}) {
  const int m = constraint_rows(model, constraints);
  Solution s{Eigen::VectorXd(model.nv), Eigen::VectorXd(m), {}, {}};
  constrained_dynamics(model, data, q, v, tau, constraints, gains, s.ddq, s.lambda);
  s.jacobian = data.workspace<ConstraintWorkspace>().jacobian.topRows(m);
  s.bias = data.workspace<ConstraintWorkspace>().bias.head(m);
  return s;
}

// |K q̈ − k| relative to the size of the terms: the constraint holds to rounding.
double constraint_residual(const Solution& s) {
  return max_abs(s.jacobian * s.ddq - s.bias) /
         std::max(1.0, max_abs(s.jacobian) * max_abs(s.ddq) + max_abs(s.bias));
}

// ---- Four-bar and slider-crank against the Lagrangian models ----------------------------------

// Tolerance against the Lagrangian models: the finite-difference kinematic coefficients are good
// to ~1e-10 (see lagrangian_motion), so 1e-7 relative leaves a wide margin and still catches any
// modelling error (a wrong sign, lever or inertia is ≥ 1e-3).
constexpr double kLagrangeTol = 1e-7;
// Identities that hold to rounding (K q̈ = k, agreement of two exact solvers).
constexpr double kExactTol = 1e-9;

class FourBarTest : public ::testing::TestWithParam<FourBarClosure> {};

TEST_P(FourBarTest, MatchesLagrangianModel) {
  const ModelPtr model = build_model(test_support::four_bar_spec(GetParam()));
  Data data(*model);
  const auto pose = [&](double phi) { return test_support::four_bar_pose(GetParam(), phi); };
  for (const double phi : {0.3, 1.2, 2.5, -1.0, -2.4}) {
    SCOPED_TRACE("crank angle " + std::to_string(phi));
    Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
    tau.head<3>() << 2.0, -0.5, 0.3;
    const PlanarMotion expected = lagrangian_motion(pose, phi, 1.5, tau);
    const Solution s = solve(*model, data, expected.q, expected.v, tau);
    EXPECT_LE(constraint_residual(s), kExactTol);
    EXPECT_LE(relative_error(s.ddq, expected.ddq), kLagrangeTol);
    // The velocity is on the constraint manifold: K q̇ = 0.
    EXPECT_LE(max_abs(s.jacobian * expected.v), 1e-9);
  }
}

TEST_P(FourBarTest, MultipliersAreTheMinimumNormOnes) {
  // Redundant rows (out-of-plane directions, and for the weld a dependent in-plane set): λ must
  // be the pseudo-inverse solution, and q̈ the unique one. The velocity is random, so the drift
  // terms are not those of a closed-loop motion.
  const ModelPtr model = build_model(test_support::four_bar_spec(GetParam()));
  Data data(*model);
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 4; ++trial) {
    const test_support::RandomState st = test_support::random_state(*model, rng);
    const Eigen::VectorXd q = test_support::four_bar_pose(GetParam(), st.q[0]).q;
    const Solution s = solve(*model, data, q, st.v, st.tau);
    const DenseSolution dense = dense_constrained_dynamics(*model, q, st.v, st.tau, {}, {});
    EXPECT_LE(relative_error(s.lambda, dense.lambda), kExactTol);
    EXPECT_LE(relative_error(s.ddq, dense.ddq), kExactTol);
  }
}

INSTANTIATE_TEST_SUITE_P(Closures, FourBarTest,
                         ::testing::Values(FourBarClosure::kRevolute, FourBarClosure::kPoint,
                                           FourBarClosure::kWeld),
                         [](const ::testing::TestParamInfo<FourBarClosure>& info) {
                           switch (info.param) {
                             case FourBarClosure::kRevolute:
                               return std::string("Revolute");
                             case FourBarClosure::kPoint:
                               return std::string("Point");
                             case FourBarClosure::kWeld:
                               break;
                           }
                           return std::string("Weld");
                         });

TEST(SliderCrankTest, MatchesLagrangianModel) {
  for (const SliderCrankClosure closure :
       {SliderCrankClosure::kPrismatic, SliderCrankClosure::kWeld}) {
    SCOPED_TRACE(closure == SliderCrankClosure::kWeld ? "weld" : "prismatic");
    const ModelPtr model = build_model(test_support::slider_crank_spec(closure));
    Data data(*model);
    const auto pose = [&](double phi) { return test_support::slider_crank_pose(closure, phi); };
    for (const double phi : {0.4, 1.0, 2.2, -0.7}) {
      Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
      tau.head<3>() << 3.0, 0.4, -0.2;
      const PlanarMotion expected = lagrangian_motion(pose, phi, -2.0, tau);
      const Solution s = solve(*model, data, expected.q, expected.v, tau);
      EXPECT_LE(constraint_residual(s), kExactTol);
      EXPECT_LE(relative_error(s.ddq, expected.ddq), kLagrangeTol) << "crank angle " << phi;
    }
  }
}

TEST(SliderCrankTest, ReproducesLegnaniVelocityAndAccelerationSystem) {
  // digest-001-004.md §7.2: l1 = 0.3, l2 = 0.8, α1 = 1, α̇1 = 2, α̈1 = 0.5. Frame 4 (the carriage)
  // coincides with frame 0 on the loop, so the weld's rows are Legnani's (b; u) rows of A and its
  // bias is his b. The digest prints 12 digits: tolerance 1e-10 absolute.
  const ModelPtr model = build_model(test_support::slider_crank_spec(SliderCrankClosure::kWeld));
  Data data(*model);
  const Eigen::VectorXd q = test_support::slider_crank_pose(SliderCrankClosure::kWeld, 1.0).q;
  Eigen::Vector4d v(2.0, -2.427045143671, 0.427045143671, -0.612686420165);
  Eigen::MatrixXd jacobian(6, 4);
  Eigen::VectorXd bias(6);
  constraint_jacobian(*model, data, q, v, {}, {}, jacobian, bias);
  Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(6, 4);
  expected.row(0) << 0.0, 0.252441295442, 0.0, -1.0;              // b_x
  expected.row(1) << 0.0, -0.162090691760, -0.921217421862, 0.0;  // b_y
  expected.row(5) << 1.0, 1.0, 1.0, 0.0;                          // u_z
  EXPECT_LE(max_abs(jacobian - expected), 1e-10);
  Eigen::VectorXd expected_bias = Eigen::VectorXd::Zero(6);
  expected_bias[0] = 0.786802852543;
  expected_bias[1] = 0.963728080006;
  EXPECT_LE(max_abs(bias - expected_bias), 1e-10);

  // The crank drives: closed-chain inverse dynamics completes the accelerations.
  const std::vector<DofInput> input = {DofInput::kAcceleration, DofInput::kForce, DofInput::kForce,
                                       DofInput::kForce};
  Eigen::VectorXd ddq(4), tau(4), lambda(6);
  closed_chain_inverse_dynamics(*model, data, q, v, Eigen::Vector4d(0.5, 0, 0, 0),
                                Eigen::VectorXd::Zero(4), input, {}, {}, ddq, tau, lambda);
  EXPECT_LE(max_abs(ddq - Eigen::Vector4d(0.5, 0.662760707961, -1.162760707961, -0.619494680857)),
            1e-10);
}

// ---- Baumgarte stabilization --------------------------------------------------------------------

// The loop's position error: distance between the constraint frames' origins and the angle
// between their z axes (the revolute's axis).
double loop_error(const Model& model, Data& data, const Eigen::VectorXd& q) {
  forward_kinematics(model, data, q);
  const BilateralConstraint& loop = model.loop_closures[0];
  const Transform f1 = data.oMi[loop.body1] * loop.placement1;
  const Transform f2 = data.oMi[loop.body2] * loop.placement2;
  return (f1.translation - f2.translation).norm() +
         f1.rotation.col(2).cross(f2.rotation.col(2)).norm();
}

double simulate_four_bar(const BaumgarteGains& gains, double seconds) {
  const ModelPtr model = build_model(test_support::four_bar_spec(FourBarClosure::kRevolute));
  const Model& m = *model;
  Data data(m);
  const PlanarMotion start = lagrangian_motion(
      [](double phi) { return test_support::four_bar_pose(FourBarClosure::kRevolute, phi); }, 0.5,
      2.0, Eigen::VectorXd::Zero(3));
  Eigen::VectorXd q = start.q, v = start.v;
  const Eigen::VectorXd tau = Eigen::Vector3d(0.5, 0.0, 0.0);
  Eigen::VectorXd lambda(5), a1(3), a2(3), a3(3), a4(3);
  const auto accel = [&](const Eigen::VectorXd& qs, const Eigen::VectorXd& vs,
                         Eigen::VectorXd& out) {
    constrained_dynamics(m, data, qs, vs, tau, {}, gains, out, lambda);
  };
  constexpr double dt = 1e-3;
  double worst = 0.0;
  const int steps = static_cast<int>(seconds / dt + 0.5);
  for (int step = 0; step < steps; ++step) {
    // Classical RK4 on (q, v), configurations advanced with integrate().
    accel(q, v, a1);
    const Eigen::VectorXd v2 = v + 0.5 * dt * a1;
    accel(integrate(m, q, 0.5 * dt * v), v2, a2);
    const Eigen::VectorXd v3 = v + 0.5 * dt * a2;
    accel(integrate(m, q, 0.5 * dt * v2), v3, a3);
    const Eigen::VectorXd v4 = v + dt * a3;
    accel(integrate(m, q, dt * v3), v4, a4);
    q = integrate(m, q, dt / 6.0 * (v + 2.0 * v2 + 2.0 * v3 + v4));
    v += dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4);
    worst = std::max(worst, loop_error(m, data, q));
  }
  return worst;
}

TEST(BaumgarteTest, KeepsFourBarLoopClosedForTenSeconds) {
  // Critically damped at 20 rad/s: K_d = 2ω, K_p = ω². The integration error of each step is
  // pulled back instead of accumulating.
  const double stabilized = simulate_four_bar({400.0, 40.0}, 10.0);
  EXPECT_LE(stabilized, 1e-6);
}

// ---- Random trees: K and k against finite differences and a dense solver ---------------------

class RandomTreeConstraintTest : public ::testing::TestWithParam<std::uint64_t> {
 protected:
  void SetUp() override {
    test_support::RandomTreeOptions options;
    options.min_links = 8;
    options.max_links = 20;
    options.floating_base = GetParam() % 2 == 0;
    model_ = build_model(test_support::random_tree_spec(GetParam(), options));
  }
  ModelPtr model_;
};

TEST_P(RandomTreeConstraintTest, BiasIsTheDerivativeOfTheConstraintVelocity) {
  // Along q(t) = q ⊕ (t q̇ + ½ t² q̈) the velocity is q̇ + t q̈ + O(t²), so the constraint velocity
  // ν(t) = K(q(t)) (q̇ + t q̈) has, by central differences, ν̇(0) = K q̈ − k (k at zero gains),
  // with an O(h²) error (the t² terms cancel): h = 1e-5 gives ~1e-10, rounding ~1e-11. Point
  // rows state the origins' relative acceleration in the world, R₁ᵀ (p̈₁ − p̈₂) = 0 (Pinocchio's
  // classical acceleration), so they are compared as world vectors R₁ ν.
  const Model& model = *model_;
  Data data(model);
  std::mt19937_64 rng(GetParam() + 100);
  const std::vector<BilateralConstraint> constraints =
      test_support::random_constraints(model, rng, 8);
  const int m = constraint_rows(model, constraints);
  const test_support::RandomState st = test_support::random_state(model, rng);
  const auto to_world_points = [&](Eigen::VectorXd x) {
    for (int c = 0, row = 0; c < static_cast<int>(constraints.size()); ++c) {
      const BilateralConstraint& k = constraints[c];
      if (k.type == ConstraintType::kPoint) {
        const Mat3 rotation = data.oMi[k.body1].rotation * k.placement1.rotation;
        x.segment<3>(row) = rotation * x.segment<3>(row);
      }
      row += constraint_dimension(k.type);
    }
    return x;
  };
  Eigen::MatrixXd jacobian(m, model.nv), moved(m, model.nv);
  Eigen::VectorXd bias(m), unused(m);
  constraint_jacobian(model, data, st.q, st.v, constraints, {}, jacobian, bias);
  const Eigen::VectorXd expected = to_world_points(jacobian * st.a - bias);
  const auto nu = [&](double t) {
    const Eigen::VectorXd qt = integrate(model, st.q, t * st.v + 0.5 * t * t * st.a);
    const Eigen::VectorXd vt = st.v + t * st.a;
    constraint_jacobian(model, data, qt, vt, constraints, {}, moved, unused);
    return to_world_points(moved * vt);
  };
  constexpr double h = 1e-5;
  EXPECT_LE(relative_error(expected, (nu(h) - nu(-h)) / (2.0 * h)), 1e-6);

  constraint_jacobian(model, data, st.q, st.v, constraints, {}, jacobian, bias);
  // Baumgarte's velocity term is K_d K q̇.
  Eigen::VectorXd damped(m);
  constraint_jacobian(model, data, st.q, st.v, constraints, {0.0, 3.0}, jacobian, damped);
  EXPECT_LE(relative_error(bias - damped, 3.0 * jacobian * st.v), kExactTol);
}

TEST_P(RandomTreeConstraintTest, MatchesDenseSolver) {
  const Model& model = *model_;
  Data data(model);
  std::mt19937_64 rng(GetParam() + 200);
  for (int count : {1, 3, 6}) {
    SCOPED_TRACE(std::to_string(count) + " constraints");
    const std::vector<BilateralConstraint> constraints =
        test_support::random_constraints(model, rng, count);
    const test_support::RandomState st = test_support::random_state(model, rng);
    const BaumgarteGains gains{25.0, 10.0};
    const Solution s = solve(model, data, st.q, st.v, st.tau, constraints, gains);
    const DenseSolution dense =
        dense_constrained_dynamics(model, st.q, st.v, st.tau, constraints, gains);
    EXPECT_LE(relative_error(s.ddq, dense.ddq), 1e-8);
    EXPECT_LE(relative_error(s.lambda, dense.lambda), 1e-8);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomTreeConstraintTest, ::testing::Values(1, 2, 3, 4, 5, 6));

// ---- Closed-chain inverse dynamics
// ---------------------------------------------------------------

struct InverseSolution {
  Eigen::VectorXd ddq, tau, lambda;
};

InverseSolution inverse(const Model& model, Data& data, const Eigen::VectorXd& q,
                        const Eigen::VectorXd& v, const Eigen::VectorXd& ddq,
                        const std::vector<DofInput>& input) {
  const int m = constraint_rows(model, {});
  InverseSolution s{Eigen::VectorXd(model.nv), Eigen::VectorXd(model.nv), Eigen::VectorXd(m)};
  closed_chain_inverse_dynamics(model, data, q, v, ddq, Eigen::VectorXd::Zero(model.nv), input, {},
                                {}, s.ddq, s.tau, s.lambda);
  return s;
}

TEST(ClosedChainInverseDynamicsTest, ExactlyActuatedFourBar) {
  for (const FourBarClosure closure : {FourBarClosure::kRevolute, FourBarClosure::kWeld}) {
    const ModelPtr model = build_model(test_support::four_bar_spec(closure));
    Data data(*model);
    const auto pose = [&](double phi) { return test_support::four_bar_pose(closure, phi); };
    std::vector<DofInput> input(model->nv, DofInput::kForce);
    input[0] = DofInput::kAcceleration;
    for (const double phi : {0.3, 2.0, -1.4}) {
      SCOPED_TRACE("crank angle " + std::to_string(phi));
      const double ddphi = 0.7;
      const PlanarMotion motion =
          lagrangian_motion(pose, phi, 1.5, Eigen::VectorXd::Zero(model->nv), &ddphi);
      Eigen::VectorXd given = Eigen::VectorXd::Zero(model->nv);
      given[0] = ddphi;
      const InverseSolution id = inverse(*model, data, motion.q, motion.v, given, input);
      EXPECT_LE(relative_error(id.ddq, motion.ddq), kLagrangeTol);
      EXPECT_NEAR(id.tau[0], lagrangian_crank_torque(pose, phi, 1.5, ddphi, model->nv),
                  kLagrangeTol * std::max(1.0, std::abs(id.tau[0])));
      EXPECT_LE(max_abs(id.tau.tail(model->nv - 1)), 0.0);
      // Forward dynamics under those forces gives the same motion and multipliers.
      const Solution fd = solve(*model, data, motion.q, motion.v, id.tau);
      EXPECT_LE(relative_error(fd.ddq, id.ddq), kExactTol);
      EXPECT_LE(relative_error(fd.lambda, id.lambda), kExactTol);
    }
  }
}

TEST(ClosedChainInverseDynamicsTest, RedundantlyActuatedGivesMinimumNormForces) {
  // Crank and rocker both driven (and, for the weld, every joint): one DOF of motion, so the
  // actuator forces are free along a null space; the minimum-norm ones are orthogonal to every
  // feasible variation −K_aᵀ δ, δ ∈ null(K_pᵀ).
  for (const FourBarClosure closure : {FourBarClosure::kRevolute, FourBarClosure::kWeld}) {
    const ModelPtr model = build_model(test_support::four_bar_spec(closure));
    const Model& m = *model;
    Data data(m);
    const auto pose = [&](double phi) { return test_support::four_bar_pose(closure, phi); };
    for (const bool all : {false, true}) {
      std::vector<DofInput> input(m.nv, all ? DofInput::kAcceleration : DofInput::kForce);
      input[0] = input[2] = DofInput::kAcceleration;
      const double ddphi = -1.3;
      const PlanarMotion motion =
          lagrangian_motion(pose, 0.9, 1.1, Eigen::VectorXd::Zero(m.nv), &ddphi);
      const InverseSolution id = inverse(m, data, motion.q, motion.v, motion.ddq, input);
      EXPECT_LE(relative_error(id.ddq, motion.ddq), kLagrangeTol);
      const Solution fd = solve(m, data, motion.q, motion.v, id.tau);
      EXPECT_LE(relative_error(fd.ddq, id.ddq), kExactTol);
      EXPECT_LE(relative_error(fd.lambda, id.lambda), kExactTol);

      std::vector<int> passive, actuated;
      for (int k = 0; k < m.nv; ++k) {
        (input[k] == DofInput::kForce ? passive : actuated).push_back(k);
      }
      const Eigen::MatrixXd jacobian = fd.jacobian;
      Eigen::MatrixXd kp(jacobian.rows(), static_cast<int>(passive.size()));
      Eigen::MatrixXd ka(jacobian.rows(), static_cast<int>(actuated.size()));
      Eigen::VectorXd tau_a(static_cast<int>(actuated.size()));
      for (std::size_t j = 0; j < passive.size(); ++j) kp.col(j) = jacobian.col(passive[j]);
      for (std::size_t j = 0; j < actuated.size(); ++j) {
        ka.col(j) = jacobian.col(actuated[j]);
        tau_a[j] = id.tau[actuated[j]];
      }
      const Eigen::MatrixXd null_space =
          passive.empty()
              ? Eigen::MatrixXd::Identity(jacobian.rows(), jacobian.rows())
              : Eigen::MatrixXd(Eigen::FullPivLU<Eigen::MatrixXd>(kp.transpose()).kernel());
      const Eigen::MatrixXd variations = ka.transpose() * null_space;
      ASSERT_GT(max_abs(variations), 1e-3) << "the case must be redundantly actuated";
      EXPECT_LE(max_abs(variations.transpose() * tau_a),
                kExactTol * max_abs(variations) * std::max(1.0, max_abs(tau_a)));
    }
  }
}

TEST(ClosedChainInverseDynamicsTest, UndeterminedPassiveJointIsAnError) {
  // Only the coupler's own joint passive with the loop cut open: nothing fixes the rocker.
  const ModelPtr model = build_model(test_support::four_bar_spec(FourBarClosure::kRevolute));
  Data data(*model);
  const Eigen::VectorXd q = test_support::four_bar_pose(FourBarClosure::kRevolute, 0.5).q;
  const std::vector<DofInput> input(3, DofInput::kForce);
  Eigen::VectorXd ddq(3), tau(3), lambda(5);
  try {
    closed_chain_inverse_dynamics(*model, data, q, Eigen::VectorXd::Zero(3),
                                  Eigen::VectorXd::Zero(3), Eigen::VectorXd::Zero(3), input, {}, {},
                                  ddq, tau, lambda);
    FAIL() << "expected SingularSystemError";
  } catch (const SingularSystemError& e) {
    EXPECT_NE(std::string(e.what()).find("joint '"), std::string::npos) << e.what();
  }
}

// ---- The residual of inconsistent and redundant constraint sets ---------------------------------

// The Stanford arm (6 DOFs) at the state of §7.1, bodies `welded` held where they are by welds to
// the world: at rest K q̈ = k holds with q̈ = 0 however many are welded, but while the arm moves
// the welds demand that each body's velocity stop changing, which three of them cannot all get
// from 6 DOFs (18 rows).
struct WeldedArm {
  ModelPtr model = build_model(dh_to_spec(test_support::stanford_arm()));
  Data data{*model};
  test_support::StanfordArmCase state;
  std::vector<BilateralConstraint> welds;

  explicit WeldedArm(const std::vector<int>& welded) {
    forward_kinematics(*model, data, state.q);
    for (const int body : welded) {
      welds.push_back({"weld" + std::to_string(body), ConstraintType::kWeld, body,
                       Transform::Identity(), 0, data.oMi[body]});
    }
  }
  ConstraintResidual solve(const Eigen::VectorXd& v, const BaumgarteGains& gains = {}) {
    Eigen::VectorXd ddq(6), lambda(constraint_rows(*model, welds));
    return constrained_dynamics(*model, data, state.q, v, state.tau, welds, gains, ddq, lambda);
  }
};

// Consistent sets leave rounding, a few ulps of the scale; inconsistent ones a good part of it.
// Each test prints what it measured (docs/operating.md quotes them).
constexpr double kConsistentResidual = 1e-12;
constexpr double kInconsistentResidual = 1e-2;
// The server's default tolerance, far between the two.
const BaumgarteGains kJudged{0.0, 0.0, {1e-6, "--the-flag"}};

void print(const std::string& what, const ConstraintResidual& r) {
  std::cout << what << ": residual " << r.residual << ", scale " << r.scale << ", relative "
            << r.residual / r.scale << "\n";
}

TEST(ConstraintResidualTest, ThreeWeldsOnAMovingArmMissTheirConstraints) {
  WeldedArm arm({4, 5, 6});
  const ConstraintResidual at_rest = arm.solve(Eigen::VectorXd::Zero(6));
  EXPECT_LE(at_rest.residual, kConsistentResidual * at_rest.scale)
      << at_rest.residual << " of " << at_rest.scale;
  const ConstraintResidual moving = arm.solve(arm.state.v);
  print("three welds at rest", at_rest);
  print("three welds moving", moving);
  EXPECT_GT(moving.residual, kInconsistentResidual * moving.scale)
      << moving.residual << " of " << moving.scale;
  try {
    arm.solve(arm.state.v, kJudged);
    FAIL() << "expected InconsistentConstraintsError";
  } catch (const InconsistentConstraintsError& e) {
    EXPECT_NE(std::string(e.what()).find("inconsistent"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--the-flag"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(arm.solve(Eigen::VectorXd::Zero(6), kJudged));
  // The derivatives solve the same system and judge it alike.
  EXPECT_THROW(constrained_dynamics_derivatives(*arm.model, arm.data, arm.state.q, arm.state.v,
                                                arm.state.tau, arm.welds, kJudged),
               InconsistentConstraintsError);
  EXPECT_NO_THROW(constrained_dynamics_derivatives(*arm.model, arm.data, arm.state.q,
                                                   Eigen::VectorXd::Zero(6), arm.state.tau,
                                                   arm.welds, kJudged));
}

TEST(ConstraintResidualTest, RedundantConsistentConstraintsLeaveRounding) {
  // The last body welded twice at the same place: 12 rows of rank 6, consistent while moving.
  WeldedArm arm({6, 6});
  const ConstraintResidual r = arm.solve(arm.state.v, kJudged);
  print("a weld twice, moving", r);
  EXPECT_GT(r.scale, 0.0);
  EXPECT_LE(r.residual, kConsistentResidual * r.scale) << r.residual << " of " << r.scale;
  // The redundant rows of a planar loop closed by a weld (Featherstone 2008, §8.4).
  const ModelPtr model = build_model(test_support::four_bar_spec(FourBarClosure::kWeld));
  Data data(*model);
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
  const PlanarMotion motion = lagrangian_motion(
      [](double phi) { return test_support::four_bar_pose(FourBarClosure::kWeld, phi); }, 0.7, 1.5,
      tau);
  Eigen::VectorXd ddq(model->nv), lambda(constraint_rows(*model, {}));
  const ConstraintResidual loop =
      constrained_dynamics(*model, data, motion.q, motion.v, tau, {}, kJudged, ddq, lambda);
  print("four-bar closed by a weld", loop);
  EXPECT_LE(loop.residual, kConsistentResidual * loop.scale)
      << loop.residual << " of " << loop.scale;
}

TEST(ConstraintResidualTest, InverseDynamicsWithInconsistentAccelerationsMissesTheLoop) {
  // The four-bar with every joint's acceleration given: only the loop's own motions hold it.
  const FourBarClosure closure = FourBarClosure::kRevolute;
  const ModelPtr model = build_model(test_support::four_bar_spec(closure));
  Data data(*model);
  const PlanarMotion motion =
      lagrangian_motion([&](double phi) { return test_support::four_bar_pose(closure, phi); }, 0.5,
                        1.0, Eigen::VectorXd::Zero(3));
  Eigen::VectorXd ddq(3), tau(3), lambda(constraint_rows(*model, {}));
  const auto solve = [&](const Eigen::VectorXd& given, const std::vector<DofInput>& inputs,
                         const BaumgarteGains& gains) {
    return closed_chain_inverse_dynamics(*model, data, motion.q, motion.v, given,
                                         Eigen::VectorXd::Zero(3), inputs, {}, gains, ddq, tau,
                                         lambda);
  };
  // The crank actuated, the others passive: the passive accelerations meet the loop exactly.
  const std::vector<DofInput> crank = {DofInput::kAcceleration, DofInput::kForce, DofInput::kForce};
  const ConstraintResidual consistent = solve(motion.ddq, crank, kJudged);
  print("four-bar, crank given", consistent);
  EXPECT_LE(consistent.residual, kConsistentResidual * consistent.scale)
      << consistent.residual << " of " << consistent.scale;
  const std::vector<DofInput> all_given(3, DofInput::kAcceleration);
  Eigen::VectorXd off_loop = motion.ddq;
  off_loop[1] += 5.0;
  const ConstraintResidual inconsistent = solve(off_loop, all_given, {});
  print("four-bar, every acceleration given off the loop", inconsistent);
  EXPECT_GT(inconsistent.residual, kInconsistentResidual * inconsistent.scale)
      << inconsistent.residual << " of " << inconsistent.scale;
  EXPECT_THROW(solve(off_loop, all_given, kJudged), InconsistentConstraintsError);
}

// ---- Two arms holding a box (Rodriguez & Kreutz 1988, Part II) ---------------------------------

// Two 6-DOF arms on a fixed base, a box held rigidly by both end effectors. box_free: the box
// is a free body (its own free-flyer) welded to each end effector. Otherwise: the box is fixed to
// arm 1's end effector (merged into its body) and welded to arm 2's only.
ModelSpec two_arm_spec(bool box_free) {
  ModelSpec spec;
  spec.name = box_free ? "two_arms_free_box" : "two_arms_attached_box";
  spec.links.push_back({"base", {}});
  std::mt19937_64 rng(17);
  for (const std::string arm : {"arm1", "arm2"}) {
    std::string parent = "base";
    for (int k = 1; k <= 6; ++k) {
      LinkSpec link;
      link.name = arm + "_link" + std::to_string(k);
      link.inertial = test_support::random_inertial(rng);
      spec.links.push_back(link);
      JointSpec joint;
      joint.name = arm + "_joint" + std::to_string(k);
      joint.parent_link = parent;
      joint.child_link = link.name;
      joint.origin.translation =
          k == 1 ? Vec3(0.0, arm == "arm1" ? 0.4 : -0.4, 0.0) : Vec3(0.05, 0.0, 0.25);
      joint.origin.rotation = test_support::random_rotation(rng);
      joint.axis = Vec3::Unit(k % 3);
      spec.joints.push_back(joint);
      parent = link.name;
    }
  }
  LinkSpec box;
  box.name = "box";
  box.inertial.mass = 2.0;
  box.inertial.origin.translation = Vec3(0.02, 0.0, -0.01);
  box.inertial.inertia = Vec3(0.02, 0.03, 0.04).asDiagonal();
  spec.links.push_back(box);
  JointSpec box_joint;
  box_joint.name = "box_joint";
  box_joint.child_link = "box";
  Transform grasp1;  // the box frame in arm 1's end-effector frame
  grasp1.rotation = Eigen::AngleAxisd(0.4, Vec3(1.0, 2.0, 0.5).normalized()).toRotationMatrix();
  grasp1.translation = Vec3(0.0, 0.0, 0.1);
  Transform grasp2;  // arm 2's grasp frame in the box frame
  grasp2.rotation = Eigen::AngleAxisd(2.5, Vec3(0.3, -1.0, 0.2).normalized()).toRotationMatrix();
  grasp2.translation = Vec3(0.0, -0.3, 0.05);
  if (box_free) {
    box_joint.type = JointType::kFreeFlyer;
    box_joint.parent_link = "base";
    spec.loop_closures.push_back(
        {"grasp1", ConstraintType::kWeld, "arm1_link6", grasp1, "box", Transform::Identity()});
  } else {
    box_joint.type = JointType::kFixed;
    box_joint.parent_link = "arm1_link6";
    box_joint.origin = grasp1;
  }
  spec.joints.push_back(box_joint);
  spec.loop_closures.push_back(
      {"grasp2", ConstraintType::kWeld, "arm2_link6", Transform::Identity(), "box", grasp2});
  return spec;
}

TEST(TwoArmsHoldingABoxTest, FreeBoxWithTwoWeldsMatchesAttachedBoxWithOne) {
  const ModelPtr loops = build_model(two_arm_spec(true));
  const ModelPtr attached = build_model(two_arm_spec(false));
  ASSERT_EQ(loops->nv, 18);
  ASSERT_EQ(attached->nv, 12);
  // The merged box keeps its grasp frame: placement = grasp1 · grasp2 on arm 1's last body.
  ASSERT_EQ(attached->loop_closures.size(), 1u);
  EXPECT_EQ(attached->loop_closures[0].body2, attached->find_body("arm1_link6"));
  Data data_loops(*loops), data_attached(*attached);
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 4; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    // A state of the attached model; the free box gets arm 1's end-effector motion, so the first
    // weld holds exactly (the second is violated alike in both models: the arms' q is random).
    const test_support::RandomState st = test_support::random_state(*attached, rng);
    forward_kinematics(*attached, data_attached, st.q, st.v);
    const int ee = attached->find_body("arm1_link6");
    const Transform box_placement =
        attached->frames[attached->find_frame("box")].placement;  // grasp1 on arm 1's body
    const Transform oMbox = data_attached.oMi[ee] * box_placement;
    const Motion box_velocity = box_placement.act_inverse(data_attached.v[ee]);
    Eigen::VectorXd q(loops->nq), v(18), tau(18);
    q.head(12) = st.q;
    q.segment<3>(12) = oMbox.translation;
    q.tail<4>() = Eigen::Quaterniond(oMbox.rotation).coeffs();
    v << st.v, box_velocity.to_vector();
    tau << st.tau, Eigen::VectorXd::Zero(6);

    const Solution with_loops = solve(*loops, data_loops, q, v, tau);
    const Solution with_one = solve(*attached, data_attached, st.q, st.v, st.tau);
    EXPECT_LE(constraint_residual(with_loops), kExactTol);
    EXPECT_LE(relative_error(with_loops.ddq.head(12), with_one.ddq), kExactTol);
    // The box's acceleration: the free-flyer's q̈ is its body-frame spatial acceleration.
    forward_kinematics(*attached, data_attached, st.q, st.v, with_one.ddq);
    const Motion box_acceleration = box_placement.act_inverse(data_attached.a[ee]);
    EXPECT_LE(relative_error(with_loops.ddq.tail(6), box_acceleration.to_vector()), kExactTol);
    // The second grasp's force is the same physical force in both; the first grasp's force
    // balances the box: I a + v ×* I v − (weight) = −(grasp forces on the box).
    EXPECT_LE(relative_error(with_loops.lambda.tail(6), with_one.lambda), kExactTol);
    const RigidInertia& inertia = loops->inertias[loops->nbodies() - 1];
    const Motion vb = Motion::FromVector(v.tail(6));
    const Motion ab = Motion::FromVector(with_loops.ddq.tail(6));
    const Vec3 gravity_box = oMbox.rotation.transpose() * loops->gravity;
    const Force inertial =
        inertia * (ab - Motion{gravity_box, Vec3::Zero()}) + vb.cross(inertia * vb);
    // Constraint 1 acts on arm 1 at grasp1 = the box origin: the box gets −λ₁ in box axes.
    const Force on_box_1 = -Force::FromVector(with_loops.lambda.head(6));
    // Constraint 2 acts on arm 2 at its frame 1 (arm 2's end effector); the box gets the
    // opposite, applied at the same point, re-expressed in the box frame.
    forward_kinematics(*loops, data_loops, q);
    const BilateralConstraint& second = loops->loop_closures[1];
    const Transform oMf1 = data_loops.oMi[second.body1] * second.placement1;
    const Transform boxMf1 = oMbox.inverse() * oMf1;
    const Force on_box_2 = -boxMf1.act(Force::FromVector(with_loops.lambda.tail(6)));
    EXPECT_LE(relative_error((on_box_1 + on_box_2).to_vector(), inertial.to_vector()), kExactTol);
  }
}

// ---- Building models with loop closures
// ----------------------------------------------------------

TEST(LoopClosureBuildTest, RejectsBadLoopsNamingThem) {
  const auto expect_error = [](ModelSpec spec, const std::string& fragment) {
    try {
      build_model(spec);
      ADD_FAILURE() << "expected ModelError containing " << fragment;
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rocker_pivot"), std::string::npos) << e.what();
    }
  };
  const ModelSpec good = test_support::four_bar_spec(FourBarClosure::kRevolute);
  ModelSpec spec = good;
  spec.loop_closures[0].link1 = "nowhere";
  expect_error(spec, "unknown link 'nowhere'");
  spec = good;
  spec.loop_closures[0].link2 = "rocker";
  expect_error(spec, "to itself");
  spec = good;
  spec.loop_closures[0].origin2.translation.x() = std::nan("");
  expect_error(spec, "non-finite");
  spec = good;
  spec.loop_closures[0].link1 = "ground";  // the fixed base is the world's body
  expect_error(spec, "rigidly connected");
  EXPECT_NO_THROW(build_model(good));
}

}  // namespace
}  // namespace torqued
