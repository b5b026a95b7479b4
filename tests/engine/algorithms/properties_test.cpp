// Identities every correct rigid-body dynamics engine satisfies, checked on seeded random trees
// (tests/engine/support/random_tree.hpp: 1 to 60 links, every joint kind, fixed joints merged,
// fixed and floating bases) at several random states each.
//
// Tolerances are relative to the size of the quantity, max(1, max|y|), and are stated per test.
// Random trees reach depth ~40 with lever arms up to ~1 m per joint, so forces and mass-matrix
// entries reach ~1e5 and condition numbers of M reach ~1e9: bars that involve solving with M
// (ABA) scale with κ(M).
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <memory>
#include <ostream>
#include <random>
#include <set>
#include <string>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

using test_support::max_abs;
using test_support::relative_error;
using test_support::TreeCase;
std::string case_name(const ::testing::TestParamInfo<TreeCase>& info) {
  return test_support::tree_case_name(info.param);
}

using test_support::random_state;
using test_support::random_tree_spec;
using test_support::RandomState;
using test_support::RandomTreeOptions;

constexpr int kStatesPerTree = 3;

class RandomTreeTest : public ::testing::TestWithParam<TreeCase> {
 protected:
  void SetUp() override { build(GetParam().floating_base, Vec3(0.0, 0.0, -9.81)); }

  void build(bool floating_base, const Vec3& gravity) {
    RandomTreeOptions options;
    options.floating_base = floating_base;
    options.min_links = GetParam().min_links;
    options.max_links = GetParam().max_links;
    options.gravity = gravity;
    spec_ = random_tree_spec(GetParam().seed, options);
    model_ = build_model(spec_);
    data_ = std::make_unique<Data>(*model_);
    rng_.seed(GetParam().seed * 7919 + 17);
  }

  // The condition number of M(q) (1 when nv = 0).
  double condition(const Eigen::MatrixXd& mass) {
    if (mass.rows() == 0) return 1.0;
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(mass);
    return eig.eigenvalues().maxCoeff() / eig.eigenvalues().minCoeff();
  }

  const Model& model() const { return *model_; }

  ModelSpec spec_;
  ModelPtr model_;
  std::unique_ptr<Data> data_;
  std::mt19937_64 rng_;
};

TEST_P(RandomTreeTest, ModelIsAWellFormedTree) {
  const Model& m = model();
  int moving = 0;
  for (const JointSpec& j : spec_.joints) moving += j.type != JointType::kFixed;
  EXPECT_EQ(m.nbodies(), 1 + moving + (GetParam().floating_base ? 1 : 0));
  EXPECT_EQ(m.parent[0], -1);
  int nq = 0;
  int nv = 0;
  for (int i = 1; i < m.nbodies(); ++i) {
    EXPECT_LT(m.parent[i], i) << "body " << i;
    EXPECT_EQ(m.joints[i].idx_q, nq);
    EXPECT_EQ(m.joints[i].idx_v, nv);
    nq += m.joints[i].nq;
    nv += m.joints[i].nv;
  }
  EXPECT_EQ(m.nq, nq);
  EXPECT_EQ(m.nv, nv);
  // Every link, moving or merged, is a named frame.
  for (const LinkSpec& link : spec_.links) EXPECT_GE(m.find_frame(link.name), 0) << link.name;
  // Joint kinds: with >= 10 links the generator places every kind at least once.
  if (spec_.links.size() >= 10) {
    std::set<JointType> kinds;
    for (int i = 1; i < m.nbodies(); ++i) kinds.insert(m.joints[i].type);
    for (JointType t :
         {JointType::kRevolute, JointType::kContinuous, JointType::kPrismatic, JointType::kHelical,
          JointType::kSpherical, JointType::kPlanar, JointType::kFreeFlyer}) {
      EXPECT_TRUE(kinds.count(t)) << joint_type_name(t);
    }
  }
}

// Forward dynamics inverts inverse dynamics. Tolerance: solving with M loses up to κ(M) relative
// to the unit roundoff (1.1e-16) times a modest factor for the O(n) recursions (n ≤ ~110 DOF):
// |Δa| ≤ (1e-12 + 1e-14 κ(M)) max(1, |a|). On these trees κ reaches ~1e6 and the observed error
// stays below 0.01 of that bar.
TEST_P(RandomTreeTest, AbaInvertsRnea) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const Eigen::VectorXd tau = rnea(model(), *data_, s.q, s.v, s.a);
    const double kappa = condition(crba(model(), *data_, s.q));
    const Eigen::VectorXd ddq = aba(model(), *data_, s.q, s.v, tau);
    const double tol = 1e-12 + 1e-14 * kappa;
    EXPECT_LE(relative_error(ddq, s.a), tol) << "state " << k << ", κ(M) = " << kappa;
    // The same with external forces on every body.
    const Eigen::VectorXd tau_f = rnea(model(), *data_, s.q, s.v, s.a, s.f_ext);
    const Eigen::VectorXd ddq_f = aba(model(), *data_, s.q, s.v, tau_f, s.f_ext);
    EXPECT_LE(relative_error(ddq_f, s.a), tol) << "state " << k << " with f_ext";
  }
}

// M is symmetric (to roundoff, 1e-13 relative) and positive definite (Cholesky succeeds and the
// smallest eigenvalue is positive: every random body has positive mass and a PD inertia).
TEST_P(RandomTreeTest, MassMatrixIsSymmetricPositiveDefinite) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const Eigen::MatrixXd mass = crba(model(), *data_, s.q);
    ASSERT_EQ(mass.rows(), model().nv);
    ASSERT_EQ(mass.cols(), model().nv);
    if (model().nv == 0) continue;
    EXPECT_LE(relative_error(mass, mass.transpose()), 1e-13);
    EXPECT_EQ(Eigen::LLT<Eigen::MatrixXd>(mass).info(), Eigen::Success);
    EXPECT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(mass).eigenvalues().minCoeff(), 0.0);
  }
}

// Column i of M is the torque needed for a unit acceleration of DOF i at rest, minus gravity.
// Tolerance 1e-11 relative to max|M|: RNEA sums forces whose size is that of M's entries times
// the lever arms, so its roundoff is a few hundred ulps of max|M| at worst.
TEST_P(RandomTreeTest, MassMatrixColumnsAreRneaAtRest) {
  const RandomState s = random_state(model(), rng_);
  const Eigen::MatrixXd mass = crba(model(), *data_, s.q);
  const Eigen::VectorXd g = generalized_gravity(model(), *data_, s.q);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model().nv);
  Eigen::MatrixXd columns(model().nv, model().nv);
  for (int i = 0; i < model().nv; ++i) {
    const Eigen::VectorXd e = Eigen::VectorXd::Unit(model().nv, i);
    columns.col(i) = rnea(model(), *data_, s.q, zero, e) - g;
  }
  EXPECT_LE(max_abs(columns - mass) / std::max(1.0, max_abs(mass)), 1e-11);
}

// nonlinear_effects(q, v) = rnea(q, v, 0) and generalized_gravity(q) = rnea(q, 0, 0): the same
// recursion, so they agree to roundoff (1e-13 relative).
TEST_P(RandomTreeTest, NonlinearEffectsAndGravityAreRneaSpecialCases) {
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model().nv);
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const Eigen::VectorXd expected_nle = rnea(model(), *data_, s.q, s.v, zero);
    EXPECT_LE(relative_error(nonlinear_effects(model(), *data_, s.q, s.v), expected_nle), 1e-13);
    const Eigen::VectorXd expected_g = rnea(model(), *data_, s.q, zero, zero);
    EXPECT_LE(relative_error(generalized_gravity(model(), *data_, s.q), expected_g), 1e-13);
    // M a + nle = rnea(q, v, a).
    const Eigen::MatrixXd mass = crba(model(), *data_, s.q);
    const Eigen::VectorXd tau = rnea(model(), *data_, s.q, s.v, s.a);
    EXPECT_LE(relative_error(mass * s.a + expected_nle, tau), 1e-11);
  }
}

// The kinetic energy ½ vᵀ M v equals the sum of the bodies' ½ v_iᵀ I_i v_i with v_i from forward
// kinematics. Tolerance 1e-12 relative to max(1, T): two sums of the same positive terms.
TEST_P(RandomTreeTest, KineticEnergyFromMassMatrixAndBodies) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const Eigen::MatrixXd mass = crba(model(), *data_, s.q);
    const double t_joint = 0.5 * s.v.dot(mass * s.v);
    forward_kinematics(model(), *data_, s.q, s.v);
    double t_bodies = 0.0;
    for (int i = 1; i < model().nbodies(); ++i) {
      t_bodies += 0.5 * data_->v[i].dot(model().inertias[i] * data_->v[i]);
    }
    EXPECT_NEAR(t_joint, t_bodies, 1e-12 * std::max(1.0, t_bodies)) << "state " << k;
  }
}

// Without gravity or torque the kinetic energy is conserved: dT/dt = vᵀ M q̈ + ½ vᵀ Ṁ v = 0 with
// q̈ from ABA and Ṁ = dM(q ⊕ t v)/dt by central differences with h = 1e-5, where the truncation
// error (h² |M'''|) and the roundoff (~1e-16 |M| / h) balance: the residual observed on these
// trees is ≤ 6e-10 of the larger of the two terms; the bar is 1e-7 of it.
TEST_P(RandomTreeTest, EnergyIsConservedWithoutGravityAndTorque) {
  build(GetParam().floating_base, Vec3::Zero());
  if (model().nv == 0) GTEST_SKIP() << "no degrees of freedom";
  const double h = 1e-5;
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model().nv);
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const Eigen::VectorXd ddq = aba(model(), *data_, s.q, s.v, zero);
    const Eigen::MatrixXd mass = crba(model(), *data_, s.q);
    const Eigen::MatrixXd m_plus = crba(model(), *data_, integrate(model(), s.q, s.v * h));
    const Eigen::MatrixXd m_minus = crba(model(), *data_, integrate(model(), s.q, s.v * -h));
    const Eigen::MatrixXd m_dot = (m_plus - m_minus) / (2.0 * h);
    const double power_inertial = s.v.dot(mass * ddq);
    const double power_velocity = 0.5 * s.v.dot(m_dot * s.v);
    const double scale = std::max({1.0, std::abs(power_inertial), std::abs(power_velocity)});
    EXPECT_LE(std::abs(power_inertial + power_velocity), 1e-7 * scale)
        << "state " << k << ": vᵀMq̈ = " << power_inertial << ", ½vᵀṀv = " << power_velocity;
  }
}

// J(q) v = frame velocity, for every frame and every reference. Tolerance 1e-12 relative to
// max(1, |velocity|): the same products summed in another order.
TEST_P(RandomTreeTest, FrameJacobianTimesVelocityIsFrameVelocity) {
  Eigen::MatrixXd jac(6, model().nv);
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    forward_kinematics(model(), *data_, s.q, s.v);
    update_frame_placements(model(), *data_);
    for (int f = 0; f < static_cast<int>(model().frames.size()); ++f) {
      for (ReferenceFrame ref :
           {ReferenceFrame::kLocal, ReferenceFrame::kLocalWorldAligned, ReferenceFrame::kWorld}) {
        jac.setConstant(std::numeric_limits<double>::quiet_NaN());  // every entry must be written
        frame_jacobian(model(), *data_, f, ref, jac);
        const Vec6 expected = frame_velocity(model(), *data_, f, ref).to_vector();
        EXPECT_LE(relative_error(jac * s.v, expected), 1e-12)
            << "frame " << model().frames[f].name << ", reference " << static_cast<int>(ref);
      }
    }
  }
}

// The three references are related by the frame placement: local = oMf⁻¹ · world, and
// local-world-aligned = world shifted to the frame origin. Tolerance 1e-12 relative.
TEST_P(RandomTreeTest, FrameVelocityReferencesAreConsistent) {
  const RandomState s = random_state(model(), rng_);
  forward_kinematics(model(), *data_, s.q, s.v);
  for (int f = 0; f < static_cast<int>(model().frames.size()); ++f) {
    const Transform omf = frame_placement(model(), *data_, f);
    const Motion local = frame_velocity(model(), *data_, f, ReferenceFrame::kLocal);
    const Motion world = frame_velocity(model(), *data_, f, ReferenceFrame::kWorld);
    const Motion aligned = frame_velocity(model(), *data_, f, ReferenceFrame::kLocalWorldAligned);
    EXPECT_LE(relative_error(omf.act(local).to_vector(), world.to_vector()), 1e-12);
    const Transform shift{Mat3::Identity(), omf.translation};
    EXPECT_LE(relative_error(shift.act_inverse(world).to_vector(), aligned.to_vector()), 1e-12);
    // The frame of a body at its origin has the body's velocity.
    const Frame& frame = model().frames[f];
    EXPECT_LE(relative_error(local.to_vector(),
                             frame.placement.act_inverse(data_->v[frame.body]).to_vector()),
              1e-12);
  }
}

// rnea with external forces = rnea − Σ J_iᵀ f_i, J_i the body's Jacobian in its local frame.
// Tolerance 1e-11 relative: forces of 10 N at lever arms of up to ~30 m.
TEST_P(RandomTreeTest, ExternalForcesEnterThroughBodyJacobians) {
  Eigen::MatrixXd jac(6, model().nv);
  std::vector<int> body_frame(model().nbodies(), -1);
  for (int i = 1; i < model().nbodies(); ++i) {
    for (int f = 0; f < static_cast<int>(model().frames.size()); ++f) {
      const Frame& frame = model().frames[f];
      if (frame.kind == FrameKind::kBody && frame.body == i) body_frame[i] = f;
    }
    ASSERT_GE(body_frame[i], 0) << "no body frame for body " << i;
    ASSERT_LE(relative_error(model().frames[body_frame[i]].placement.rotation, Mat3::Identity()),
              1e-15);
    ASSERT_LE(max_abs(model().frames[body_frame[i]].placement.translation), 1e-15);
  }
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    Eigen::VectorXd expected = rnea(model(), *data_, s.q, s.v, s.a);
    forward_kinematics(model(), *data_, s.q);
    for (int i = 1; i < model().nbodies(); ++i) {
      frame_jacobian(model(), *data_, body_frame[i], ReferenceFrame::kLocal, jac);
      expected -= jac.transpose() * s.f_ext[i].to_vector();
    }
    const Eigen::VectorXd got = rnea(model(), *data_, s.q, s.v, s.a, s.f_ext);
    EXPECT_LE(relative_error(got, expected), 1e-11) << "state " << k;
  }
}

// integrate and difference are inverse to each other. Tolerance 1e-12 for velocities in [−1, 1]
// (a few exp/log evaluations on angles of order 1); 1e-9 on placements for arbitrary pairs of
// configurations, whose relative rotations come close to π where log loses digits.
TEST_P(RandomTreeTest, IntegrateDifferenceRoundTrip) {
  auto placements = [&](const Eigen::VectorXd& q) {
    forward_kinematics(model(), *data_, q);
    std::vector<Transform> out(data_->oMi.begin(), data_->oMi.end());
    return out;
  };
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s0 = random_state(model(), rng_);
    const RandomState s1 = random_state(model(), rng_);
    // Velocities in [−1, 1]: rotation angles below √3 < π, where log is the inverse of exp.
    EXPECT_LE(max_abs(difference(model(), s0.q, integrate(model(), s0.q, s0.v)) - s0.v), 1e-12);
    EXPECT_LE(max_abs(integrate(model(), s0.q, Eigen::VectorXd::Zero(model().nv)) - s0.q), 1e-15);
    EXPECT_LE(max_abs(difference(model(), s0.q, s0.q)), 1e-15);
    // From q0 to an arbitrary q1: compared through the body placements, since a quaternion and
    // its negative (or an angle and itself plus 2π) are the same configuration.
    const Eigen::VectorXd q1 = integrate(model(), s0.q, difference(model(), s0.q, s1.q));
    EXPECT_LE(quaternion_norm_error(model(), q1.data()), 1e-12);
    const std::vector<Transform> want = placements(s1.q);
    const std::vector<Transform> got = placements(q1);
    for (int i = 1; i < model().nbodies(); ++i) {
      EXPECT_LE(max_abs(got[i].rotation - want[i].rotation), 1e-9) << "body " << i;
      EXPECT_LE(max_abs(got[i].translation - want[i].translation), 1e-9) << "body " << i;
    }
  }
}

std::vector<TreeCase> tree_cases() {
  std::vector<TreeCase> cases;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) cases.push_back({seed, seed % 3 == 0, 1, 60});
  cases.push_back({101, false, 60, 60});
  cases.push_back({102, true, 60, 60});
  // Small trees, down to a single link (no degrees of freedom with a fixed base).
  cases.push_back({201, false, 1, 1});
  cases.push_back({202, true, 1, 1});
  for (std::uint64_t seed = 203; seed <= 206; ++seed) cases.push_back({seed, seed % 2 == 0, 2, 5});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, RandomTreeTest, ::testing::ValuesIn(tree_cases()), case_name);

}  // namespace
}  // namespace torqued
