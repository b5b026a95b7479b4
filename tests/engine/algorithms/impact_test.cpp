// Impacts (impact.hpp): energy never increases, e = 1 on one frictionless contact conserves it,
// post-impact normal velocities are non-negative, and a single contact matches the closed form
// of Featherstone's (9.69).
#include "engine/algorithms/impact.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

#include "tests/engine/support/contact_models.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

double kinetic_energy(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
  Data data(model);
  return 0.5 * v.dot(crba(model, data, q) * v);
}

// Normal velocity of each contact point, through frame_jacobian().
Eigen::VectorXd normal_velocities(const Model& model, const Eigen::VectorXd& q,
                                  const Eigen::VectorXd& v,
                                  const std::vector<PointContact>& contacts) {
  Data data(model);
  forward_kinematics(model, data, q);
  Eigen::VectorXd out(contacts.size());
  for (std::size_t k = 0; k < contacts.size(); ++k) {
    out[k] = contacts[k].normal.dot(
        test_support::point_jacobian(model, data, contacts[k].body, contacts[k].point) * v);
  }
  return out;
}

TEST(Impact, EnergyNeverIncreasesAndContactsSeparate) {
  int checked = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed + 500);
    const ModelPtr model = test_support::random_contact_tree(seed, 12, seed % 2 == 1);
    const test_support::RandomState s = test_support::random_state(*model, rng);
    const int m = 1 + static_cast<int>(seed % 4);
    const double mu = seed % 3 == 0 ? 0.0 : 0.6;
    const double e = 0.5 * static_cast<double>(seed % 3);
    std::vector<PointContact> contacts;
    for (int k = 0; k < m; ++k) {
      contacts.push_back({1 + static_cast<int>(rng() % (model->nbodies() - 1)),
                          test_support::uniform_vector(rng, 3, -0.3, 0.3),
                          test_support::uniform_vector(rng, 3, -1.0, 1.0).normalized(), mu});
    }
    Data data(*model);
    ContactWorkspace ws(*model, 4);
    ContactOptions solver;
    solver.max_iterations = 20000;
    const ComplementarityResult result = impact(*model, data, ws, s.q, s.v, contacts, e, solver);
    if (result.status != ComplementarityStatus::kSolved) continue;
    ++checked;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const double before = kinetic_energy(*model, s.q, s.v);
    const double after = kinetic_energy(*model, s.q, ws.velocity);
    // Rounding of ½vᵀMv, relative.
    EXPECT_LE(after, before * (1.0 + 1e-12) + 1e-12);
    const Eigen::VectorXd vn = normal_velocities(*model, s.q, ws.velocity, contacts);
    for (int k = 0; k < m; ++k) {
      EXPECT_GE(vn[k], -1e-9) << "contact " << k << " still approaching";
      const Vec3& f = ws.forces[k];
      const double normal = f.dot(contacts[k].normal);
      EXPECT_GE(normal, 0.0);
      EXPECT_LE((f - normal * contacts[k].normal).norm(), mu * normal * (1.0 + 1e-12) + 1e-12);
    }
  }
  // Only problems with no solution at all (normals fighting over too few DOFs) are left out.
  EXPECT_GE(checked, 50);
}

// One frictionless corner of a tumbling box hits the ground: with e = 1 the kinetic energy is
// conserved and the normal velocity reverses; for any e the impulse is (9.69)'s
// γ = −(1 + e) v_n / (J_n M⁻¹ J_nᵀ).
TEST(Impact, SingleContactMatchesClosedForm) {
  const Vec3 half(0.2, 0.15, 0.1);
  const ModelPtr model = test_support::floating_box(2.0, half);
  std::mt19937_64 rng(3);
  Eigen::VectorXd q = random_configuration(*model, rng);
  Eigen::VectorXd v(6);
  v << 0.3, -0.2, -2.5, 0.4, -0.6, 0.2;
  const std::vector<PointContact> contacts = {
      {1, Vec3(half.x(), -half.y(), -half.z()), Vec3(0.0, 0.0, 1.0), 0.0}};
  Data data(*model);
  forward_kinematics(*model, data, q);
  const Eigen::RowVectorXd jn =
      Vec3::UnitZ().transpose() * test_support::point_jacobian(*model, data, 1, contacts[0].point);
  // v is in the base frame, which is randomly rotated: turn it so that the corner approaches.
  if (jn.dot(v) > 0.0) v = -v;
  const double vn = jn * v;
  ASSERT_LT(vn, 0.0);
  const Eigen::MatrixXd mass = crba(*model, data, q);
  const double inverse_inertia = jn * mass.ldlt().solve(jn.transpose());
  ContactWorkspace ws(*model, 1);
  for (double e : {0.0, 0.3, 1.0}) {
    SCOPED_TRACE("e = " + std::to_string(e));
    ASSERT_EQ(impact(*model, data, ws, q, v, contacts, e).status, ComplementarityStatus::kSolved);
    EXPECT_NEAR(ws.forces[0].z(), -(1.0 + e) * vn / inverse_inertia, 1e-12);
    EXPECT_NEAR(normal_velocities(*model, q, ws.velocity, contacts)[0], -e * vn, 1e-12);
    const double before = kinetic_energy(*model, q, v);
    const double after = kinetic_energy(*model, q, ws.velocity);
    if (e == 1.0) {
      EXPECT_NEAR(after, before, 1e-12 * before);
    } else {
      EXPECT_LT(after, before);
    }
  }
}

// A box landing flat on four corners (positive semi-definite) stops dead with e = 0 and bounces
// back with its velocity reversed with e = 1, however the solver splits the impulse.
TEST(Impact, FlatBoxLandingOnFourCorners) {
  const test_support::RestingBox box;
  const Model& model = *box.model;
  Eigen::VectorXd v = Eigen::VectorXd::Zero(6);
  v[2] = -2.0;
  for (double mu : {0.0, 0.7}) {
    const std::vector<PointContact> contacts = test_support::corner_contacts(box.half, mu);
    Data data(model);
    ContactWorkspace ws(model, 4);
    for (double e : {0.0, 1.0}) {
      SCOPED_TRACE("mu " + std::to_string(mu) + ", e " + std::to_string(e));
      ASSERT_EQ(impact(model, data, ws, box.q, v, contacts, e).status,
                ComplementarityStatus::kSolved);
      Eigen::VectorXd expected = Eigen::VectorXd::Zero(6);
      expected[2] = 2.0 * e;
      // Gauss-Seidel's tolerance (1e-10 m/s) spread over the four corners.
      EXPECT_LT((ws.velocity - expected).norm(), 1e-9);
    }
  }
}

}  // namespace
}  // namespace torqued
