// Contact dynamics (contact_dynamics.hpp) against an independent dense evaluation: the Jacobians
// from frame_jacobian(), the point accelerations from forward_kinematics(), M from crba() and a
// dense inverse, and the frictionless LCP solved by enumerating all 2^m active sets.
#include "engine/algorithms/contact_dynamics.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <random>

#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/contact_models.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

using test_support::relative_error;

// Everything about a contact problem, computed densely and independently of the engine's path.
struct DenseProblem {
  Eigen::MatrixXd mass, jacobian;  // jacobian: 3m x nv on the engine's contact axes
  Eigen::VectorXd free_acceleration, gamma;
};

DenseProblem dense_problem(const Model& model, const ContactWorkspace& ws, const Eigen::VectorXd& q,
                           const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                           const std::vector<PointContact>& contacts) {
  Data data(model);
  DenseProblem p;
  const Eigen::VectorXd c = nonlinear_effects(model, data, q, v);
  p.mass = crba(model, data, q);
  p.free_acceleration = p.mass.ldlt().solve(tau - c);
  const int m = static_cast<int>(contacts.size());
  p.jacobian.resize(3 * m, model.nv);
  p.gamma.resize(3 * m);
  for (int k = 0; k < m; ++k) {
    const Vec3 gamma = test_support::point_bias_acceleration(model, data, q, v, contacts[k].body,
                                                             contacts[k].point);
    const Eigen::MatrixXd jp =
        test_support::point_jacobian(model, data, contacts[k].body, contacts[k].point);
    p.jacobian.middleRows<3>(3 * k) = ws.axes[k].transpose() * jp;
    p.gamma.segment<3>(3 * k) = ws.axes[k].transpose() * gamma;
  }
  return p;
}

// Checks the engine's answer against the dense problem: the equation of motion with the reported
// world forces, and the contact conditions on the independently computed accelerations.
void check_solution(const DenseProblem& p, const ContactWorkspace& ws,
                    const std::vector<PointContact>& contacts, double tolerance) {
  const int m = static_cast<int>(contacts.size());
  Eigen::VectorXd generalized_force = Eigen::VectorXd::Zero(p.mass.rows());
  Eigen::VectorXd local(3 * m);
  for (int k = 0; k < m; ++k) {
    local.segment<3>(3 * k) = ws.axes[k].transpose() * ws.forces[k];
  }
  generalized_force = p.jacobian.transpose() * local;
  const Eigen::VectorXd expected = p.free_acceleration + p.mass.ldlt().solve(generalized_force);
  EXPECT_LT(relative_error(ws.acceleration, expected), 1e-9) << "equation of motion";
  const Eigen::VectorXd a = p.jacobian * ws.acceleration + p.gamma;
  for (int k = 0; k < m; ++k) {
    const double normal = local[3 * k];
    const double mu = contacts[k].friction;
    EXPECT_GE(normal, 0.0) << "contact " << k;
    EXPECT_GE(a[3 * k], -tolerance) << "normal acceleration of contact " << k;
    // The solver bounds the acceleration's residual, so the product grows with the force.
    EXPECT_LE(std::abs(normal * a[3 * k]), tolerance * std::max(1.0, normal))
        << "complementarity of contact " << k;
    const Eigen::Vector2d ft = local.segment<2>(3 * k + 1);
    EXPECT_LE(ft.norm(), mu * normal * (1.0 + 1e-12) + 1e-12) << "friction cone, contact " << k;
  }
}

std::vector<PointContact> random_contacts(const Model& model, std::mt19937_64& rng, int count,
                                          double friction) {
  std::vector<PointContact> contacts;
  for (int k = 0; k < count; ++k) {
    PointContact c;
    c.body = 1 + static_cast<int>(rng() % (model.nbodies() - 1));
    c.point = test_support::uniform_vector(rng, 3, -0.3, 0.3);
    c.normal = test_support::uniform_vector(rng, 3, -1.0, 1.0).normalized();
    c.friction = friction;
    contacts.push_back(c);
  }
  return contacts;
}

// Frictionless: Lemke's answer is the one that enumerating every active set finds (all valid
// sets give the same q̈, Featherstone §9.7), and it meets the complementarity conditions.
TEST(ContactDynamics, FrictionlessMatchesActiveSetEnumeration) {
  int compared = 0;
  int infeasible = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    const ModelPtr model = test_support::random_contact_tree(seed, 12, seed % 2 == 0);
    const int m = 1 + static_cast<int>(seed % 4);
    const std::vector<PointContact> contacts = random_contacts(*model, rng, m, 0.0);
    const test_support::RandomState s = test_support::random_state(*model, rng);
    Data data(*model);
    ContactWorkspace ws(*model, 4);
    const ComplementarityResult result =
        contact_dynamics(*model, data, ws, s.q, s.v, s.tau, contacts);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const DenseProblem p = dense_problem(*model, ws, s.q, s.v, s.tau, contacts);

    // Normal rows only: a = A λ + b.
    Eigen::MatrixXd jn(m, model->nv);
    Eigen::VectorXd gn(m);
    for (int k = 0; k < m; ++k) {
      jn.row(k) = p.jacobian.row(3 * k);
      gn[k] = p.gamma[3 * k];
    }
    const Eigen::MatrixXd minv_jt = p.mass.ldlt().solve(jn.transpose());
    const Eigen::MatrixXd a = jn * minv_jt;
    const Eigen::VectorXd b = jn * p.free_acceleration + gn;
    bool found = false;
    for (int set = 0; set < (1 << m) && !found; ++set) {
      std::vector<int> active;
      for (int k = 0; k < m; ++k) {
        if (set & (1 << k)) active.push_back(k);
      }
      Eigen::VectorXd lambda = Eigen::VectorXd::Zero(m);
      if (!active.empty()) {
        const int n = static_cast<int>(active.size());
        Eigen::MatrixXd a_ss(n, n);
        Eigen::VectorXd b_s(n);
        for (int i = 0; i < n; ++i) {
          b_s[i] = b[active[i]];
          for (int j = 0; j < n; ++j) a_ss(i, j) = a(active[i], active[j]);
        }
        Eigen::FullPivLU<Eigen::MatrixXd> lu(a_ss);
        if (lu.rank() < n) continue;
        const Eigen::VectorXd x = lu.solve(-b_s);
        for (int i = 0; i < n; ++i) lambda[active[i]] = x[i];
      }
      const Eigen::VectorXd w = a * lambda + b;
      const double scale = 1e-9 * (1.0 + b.cwiseAbs().maxCoeff());
      if (lambda.minCoeff() < -scale || w.minCoeff() < -scale) continue;
      found = true;
      ASSERT_EQ(result.status, ComplementarityStatus::kSolved);
      EXPECT_LT(result.residual, 1e-9);
      check_solution(p, ws, contacts, 1e-9);
      const Eigen::VectorXd ddq = p.free_acceleration + minv_jt * lambda;
      EXPECT_LT(relative_error(ws.acceleration, ddq), 1e-8);
      ++compared;
    }
    if (!found) {
      // Contacts whose normals fight over too few DOFs: no force can satisfy them all
      // (Featherstone's inconsistent case, §9.8.2), and Lemke must say so by ending on a ray.
      EXPECT_EQ(result.status, ComplementarityStatus::kNoSolution);
      ++infeasible;
    }
  }
  EXPECT_EQ(compared + infeasible, 60);
  EXPECT_GE(compared, 50) << "too few random problems have a solution to be a test";
}

// Coulomb friction on random trees, at rest (the acceleration-level cone problem) and moving
// (contacts already sliding): forces in the cone, complementarity, and for sliding contacts the
// friction opposite the slip velocity at full magnitude μ λ_n.
TEST(ContactDynamics, CoulombFrictionOnRandomTrees) {
  int solved = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed + 1000);
    const ModelPtr model = test_support::random_contact_tree(seed, 10, true);
    const std::vector<PointContact> contacts =
        random_contacts(*model, rng, 1 + static_cast<int>(seed % 3), 0.2 + 0.02 * seed);
    test_support::RandomState s = test_support::random_state(*model, rng);
    const bool moving = seed % 2 == 0;
    if (!moving) s.v.setZero();
    Data data(*model);
    ContactWorkspace ws(*model, 4);
    ContactOptions solver;
    solver.max_iterations = 20000;
    const ComplementarityResult result =
        contact_dynamics(*model, data, ws, s.q, s.v, s.tau, contacts, solver);
    SCOPED_TRACE("seed " + std::to_string(seed));
    if (result.status != ComplementarityStatus::kSolved) continue;
    ++solved;
    EXPECT_LE(result.residual, solver.tolerance);
    const DenseProblem p = dense_problem(*model, ws, s.q, s.v, s.tau, contacts);
    check_solution(p, ws, contacts, 1e-8);
    if (moving) {
      forward_kinematics(*model, data, s.q, s.v);
      for (std::size_t k = 0; k < contacts.size(); ++k) {
        const Eigen::MatrixXd jp =
            test_support::point_jacobian(*model, data, contacts[k].body, contacts[k].point);
        Vec3 slip = jp * s.v;
        slip -= slip.dot(contacts[k].normal) * contacts[k].normal;
        const Vec3 f = ws.forces[k];
        const double normal = f.dot(contacts[k].normal);
        const Vec3 tangential = f - normal * contacts[k].normal;
        EXPECT_LT((tangential + contacts[k].friction * normal * slip.normalized()).norm(),
                  1e-9 * (1.0 + normal))
            << "sliding friction of contact " << k;
      }
    }
  }
  // Projected Gauss-Seidel need not converge on the friction problem of an arbitrary tree with
  // arbitrary normals (it is not a convex program), but it does on nearly all of them.
  EXPECT_GE(solved, 36);
}

// A box resting flat on four frictionless corners: the normals are parallel, A has rank 3 and the
// LCP is only positive semi-definite (Featherstone's Fig. 9-7). Lemke terminates with a valid
// answer: the box stays at rest and the normal forces carry its weight.
TEST(ContactDynamics, BoxOnFourFrictionlessCornersIsSemiDefinite) {
  const test_support::RestingBox box;
  const Model& model = *box.model;
  const double mass = box.mass;
  const Eigen::VectorXd& q = box.q;
  const std::vector<PointContact> contacts = test_support::corner_contacts(box.half, 0.0);
  Data data(model);
  ContactWorkspace ws(model, 4);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(6);
  const ComplementarityResult result = contact_dynamics(model, data, ws, q, zero, zero, contacts);
  ASSERT_EQ(result.status, ComplementarityStatus::kSolved);
  EXPECT_LT(ws.acceleration.norm(), 1e-12);
  Vec3 total = Vec3::Zero();
  for (int k = 0; k < 4; ++k) total += ws.forces[k];
  EXPECT_NEAR(total.z(), mass * 9.81, 1e-9);
  const DenseProblem p = dense_problem(model, ws, q, zero, zero, contacts);
  check_solution(p, ws, contacts, 1e-9);
}

// The same box with friction μ = 0.5, pushed sideways through its base wrench: below μ m g it
// sticks (q̈ = 0), above it slides with acceleration (F − μ m g) / m.
TEST(ContactDynamics, BoxStickThenSlideUnderPush) {
  const double mu = 0.5;
  const test_support::RestingBox box;
  const Model& model = *box.model;
  const double mass = box.mass;
  const Eigen::VectorXd& q = box.q;
  const std::vector<PointContact> contacts = test_support::corner_contacts(box.half, mu);
  Data data(model);
  ContactWorkspace ws(model, 4);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(6);
  for (double push : {5.0, 15.0}) {
    SCOPED_TRACE("push " + std::to_string(push));
    Eigen::VectorXd tau = zero;
    tau[0] = push;
    const ComplementarityResult result = contact_dynamics(model, data, ws, q, zero, tau, contacts);
    ASSERT_EQ(result.status, ComplementarityStatus::kSolved);
    const double expected = std::max(0.0, (push - mu * mass * 9.81) / mass);
    // PGS stops at a residual of 1e-10 m/s²; the PSD problem spreads that over the corners.
    EXPECT_NEAR(ws.acceleration[0], expected, 1e-8);
    EXPECT_LT(ws.acceleration.tail<5>().norm(), 1e-8);
    const DenseProblem p = dense_problem(model, ws, q, zero, tau, contacts);
    check_solution(p, ws, contacts, 1e-8);
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(ws.modes[k],
                push < mu * mass * 9.81 ? ContactMode::kSticking : ContactMode::kSliding);
    }
  }
}

// solo12 on its four feet (frictionless: positive semi-definite in the base directions the feet
// cannot hold; with friction μ = 0.8): both solvers terminate with valid answers, and with the
// static torques and friction the robot stays at rest.
TEST(ContactDynamics, Solo12FourFeet) {
  const std::optional<ModelPtr> solo = test_support::solo12();
  if (!solo)
    GTEST_SKIP() << "solo12.urdf is absent (the shared reference material is not checked out)";
  const Model& model = **solo;
  for (double mu : {0.0, 0.8}) {
    SCOPED_TRACE("mu " + std::to_string(mu));
    const test_support::Standing standing = test_support::solo12_standing(model, mu);
    const Eigen::VectorXd tau = test_support::static_torques(model, standing.q, standing.feet);
    const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model.nv);
    Data data(model);
    ContactWorkspace ws(model, 4);
    const ComplementarityResult result =
        contact_dynamics(model, data, ws, standing.q, zero, tau, standing.feet);
    ASSERT_EQ(result.status, ComplementarityStatus::kSolved);
    const DenseProblem p = dense_problem(model, ws, standing.q, zero, tau, standing.feet);
    check_solution(p, ws, standing.feet, 1e-8);
    if (mu > 0.0) {
      EXPECT_LT(ws.acceleration.norm(), 1e-8);
    }
  }
}

}  // namespace
}  // namespace torqued
