// Simulation (simulate.hpp): a bouncing ball, resting contact without drift (a box on four
// corners, solo12 on four feet), a sliding box stopped by friction, and the convergence orders
// of RK4 and semi-implicit Euler on a pendulum.
#include "engine/algorithms/simulate.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/algorithms/centroidal.hpp"
#include "tests/engine/support/contact_models.hpp"

namespace torqued {
namespace {

struct Trajectory {
  Eigen::MatrixXd q, v;
  SimulationResult result;
};

Trajectory run(const Model& model, const Eigen::VectorXd& q0, const Eigen::VectorXd& v0,
               const Eigen::MatrixXd& torques, const std::vector<ContactCandidate>& candidates,
               const SimulationOptions& options, int steps) {
  Data data(model);
  SimulationWorkspace ws(model, std::max<int>(1, static_cast<int>(candidates.size())));
  Trajectory t{Eigen::MatrixXd(model.nq, steps), Eigen::MatrixXd(model.nv, steps), {}};
  t.result = simulate(model, data, ws, q0, v0, torques, candidates, options, t.q, t.v);
  return t;
}

std::vector<ContactCandidate> corner_candidates(const Vec3& half) {
  std::vector<ContactCandidate> corners;
  for (const Vec3& c : test_support::bottom_corners(half)) corners.push_back({1, c});
  return corners;
}

// A ball dropped from 1 m (lowest point) with restitution e rebounds to e² m. The contact is
// speculative: the bounce happens within |v| h = 4.4e-4 m above the plane, and semi-implicit
// Euler's free flight loses about g h T / 2 ≈ 4e-4 m per flight of T ≈ 0.45 s; 2e-3 m covers both.
TEST(Simulate, BallBouncesToRestitutionSquaredHeight) {
  const double radius = 0.1;
  const ModelPtr model = test_support::floating_ball(1.0, radius);
  Eigen::VectorXd q0 = model->neutral_configuration();
  q0[2] = 1.0 + radius;
  SimulationOptions options;
  options.time_step = 1e-4;
  options.friction = 0.5;
  for (double e : {0.5, 0.8}) {
    SCOPED_TRACE("e = " + std::to_string(e));
    options.restitution = e;
    const Trajectory t = run(*model, q0, Eigen::VectorXd::Zero(6), Eigen::MatrixXd(6, 0),
                             {{1, Vec3(0.0, 0.0, -radius)}}, options, 9000);
    ASSERT_EQ(t.result.status, ComplementarityStatus::kSolved);
    int landing = 0;
    for (int k = 1; k < 9000; ++k) {
      if (t.q(2, k) < t.q(2, landing)) landing = k;
      if (t.v(2, k) > 0.0) break;
    }
    double apex = 0.0;
    for (int k = landing; k < 9000; ++k) apex = std::max(apex, t.q(2, k) - radius);
    EXPECT_NEAR(t.q(2, landing) - radius, 0.0, 1e-3) << "no penetration at the bounce";
    EXPECT_NEAR(apex, e * e, 2e-3);
  }
}

// A box set down on its four corners stays put: 1,000 steps of 1 ms move it by less than 1e-6 m.
TEST(Simulate, BoxRestsOnFourCornersWithoutDrift) {
  const test_support::RestingBox box;
  const Model& model = *box.model;
  const Eigen::VectorXd& q0 = box.q;
  const std::vector<ContactCandidate> corners = corner_candidates(box.half);
  SimulationOptions options;
  options.friction = 0.8;
  const Trajectory t =
      run(model, q0, Eigen::VectorXd::Zero(6), Eigen::MatrixXd(6, 0), corners, options, 1000);
  EXPECT_EQ(t.result.status, ComplementarityStatus::kSolved)
      << t.result.max_iterations << " " << t.result.max_residual;
  EXPECT_EQ(t.result.max_contacts, 4);
  EXPECT_LT((t.q.col(999).head<3>() - q0.head<3>()).norm(), 1e-6);
  EXPECT_LT((t.q.col(999).tail<4>() - q0.tail<4>()).norm(), 1e-6);
}

// A box sliding at 2 m/s on μ = 0.5 stops after v² / (2 μ g) = 0.4077 m; the step (1 ms) makes
// the distance uncertain by about v h = 2e-3 m.
TEST(Simulate, FrictionStopsASlidingBox) {
  const test_support::RestingBox box;
  const Model& model = *box.model;
  const Eigen::VectorXd& q0 = box.q;
  Eigen::VectorXd v0 = Eigen::VectorXd::Zero(6);
  v0[0] = 2.0;
  const std::vector<ContactCandidate> corners = corner_candidates(box.half);
  SimulationOptions options;
  options.friction = 0.5;
  const Trajectory t = run(model, q0, v0, Eigen::MatrixXd(6, 0), corners, options, 1000);
  EXPECT_EQ(t.result.status, ComplementarityStatus::kSolved)
      << t.result.max_iterations << " " << t.result.max_residual;
  EXPECT_NEAR(t.q(0, 999), 4.0 / (2.0 * 0.5 * 9.81), 2e-3);
  EXPECT_LT(t.v.col(999).norm(), 1e-6);
  EXPECT_NEAR(t.q(2, 999), box.half.z(), 1e-6);
}

// solo12 standing on its four feet with the torques that hold the pose: 1,000 steps of 1 ms move
// the base by less than 1e-6 m.
TEST(Simulate, Solo12StandsStill) {
  const std::optional<ModelPtr> solo = test_support::solo12();
  if (!solo)
    GTEST_SKIP() << "solo12.urdf is absent (the shared reference material is not checked out)";
  const Model& model = **solo;
  const test_support::Standing standing = test_support::solo12_standing(model, 0.8);
  const Eigen::VectorXd tau = test_support::static_torques(model, standing.q, standing.feet);
  std::vector<ContactCandidate> feet;
  for (const PointContact& f : standing.feet) feet.push_back({f.body, f.point});
  SimulationOptions options;
  options.friction = 0.8;
  const Trajectory t =
      run(model, standing.q, Eigen::VectorXd::Zero(model.nv), tau, feet, options, 1000);
  EXPECT_EQ(t.result.status, ComplementarityStatus::kSolved)
      << t.result.max_iterations << " " << t.result.max_residual;
  EXPECT_EQ(t.result.max_contacts, 4);
  EXPECT_LT((t.q.col(999).head<3>() - standing.q.head<3>()).norm(), 1e-6);
  EXPECT_LT((t.q.col(999) - standing.q).cwiseAbs().maxCoeff(), 1e-6);
}

// A pendulum swinging from 1 rad for 2 s: the largest energy error of RK4 shrinks about 16x when
// the step halves (fourth order), that of semi-implicit Euler about 2x (first order, symplectic).
TEST(Simulate, RungeKuttaAndEulerEnergyOrders) {
  ModelSpec spec;
  spec.name = "pendulum";
  spec.links.push_back({"base", {}});
  LinkSpec bob{"bob", {}};
  bob.inertial.mass = 1.0;
  bob.inertial.origin.translation = Vec3(0.0, 0.0, -0.5);
  bob.inertial.inertia = Mat3::Identity() * 1e-3;
  spec.links.push_back(bob);
  JointSpec hinge;
  hinge.name = "hinge";
  hinge.parent_link = "base";
  hinge.child_link = "bob";
  hinge.axis = Vec3::UnitX();
  spec.joints.push_back(hinge);
  const ModelPtr model = build_model(spec);
  Data data(*model);
  const auto energy = [&](const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
    const double kinetic = 0.5 * v.dot(crba(*model, data, q) * v);
    return kinetic - model->gravity.dot(center_of_mass(*model, data, q));
  };
  const Eigen::VectorXd q0 = Eigen::VectorXd::Constant(1, 1.0);
  const Eigen::VectorXd v0 = Eigen::VectorXd::Zero(1);
  const double e0 = energy(q0, v0);
  const auto error = [&](Integrator integrator, double h) {
    SimulationOptions options;
    options.integrator = integrator;
    options.time_step = h;
    const int steps = static_cast<int>(std::lround(2.0 / h));
    const Trajectory t = run(*model, q0, v0, Eigen::MatrixXd(1, 0), {}, options, steps);
    double worst = 0.0;
    for (int k = 0; k < steps; ++k) {
      worst = std::max(worst, std::abs(energy(t.q.col(k), t.v.col(k)) - e0));
    }
    return worst;
  };
  const double rk4_ratio =
      error(Integrator::kRungeKutta4, 5e-3) / error(Integrator::kRungeKutta4, 2.5e-3);
  // Measured ratios fall from 31 (h = 0.04) through 21 (h = 0.005) towards 16 as h shrinks: the
  // next term of the error still shows at these steps.
  EXPECT_GT(rk4_ratio, 12.0);
  EXPECT_LT(rk4_ratio, 24.0);
  const double euler_ratio =
      error(Integrator::kSemiImplicitEuler, 5e-3) / error(Integrator::kSemiImplicitEuler, 2.5e-3);
  EXPECT_GT(euler_ratio, 1.5);
  EXPECT_LT(euler_ratio, 2.5);
  // Explicit Euler is first order too, but not symplectic: its energy drifts instead of
  // oscillating, so it ends further from e0 than the semi-implicit step at the same h.
  const double explicit_coarse = error(Integrator::kExplicitEuler, 5e-3);
  const double explicit_ratio = explicit_coarse / error(Integrator::kExplicitEuler, 2.5e-3);
  EXPECT_GT(explicit_ratio, 1.5);
  EXPECT_LT(explicit_ratio, 2.5);
  EXPECT_GT(explicit_coarse, error(Integrator::kSemiImplicitEuler, 5e-3));
}

}  // namespace
}  // namespace torqued
