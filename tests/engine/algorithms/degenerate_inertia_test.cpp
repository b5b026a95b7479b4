// Robot descriptions with the inertias real files ship (tests/engine/model/data/*.urdf): links
// modelled as point masses, one with off-diagonal noise; a point mass on its joint's axis at the
// tip of the tree; a near-massless sensor link whose tensor an exporter rounded into a slightly
// indefinite one. They load (with a warning where a tensor is indefinite, the inertias exactly as
// written), refuse to load under strict checking when they warn, and compute: only forward
// dynamics through a joint that moves no inertia fails, naming it. Pinocchio's results for the
// same files are checked in golden_test.cpp.
//
// Tolerance: the algorithms agree with each other to 1e-12 relative, max|x − y| / max(1, max|y|):
// these models are well conditioned (κ(M) < 1e3 at the states used), so a few hundred ulps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/forward_dynamics_crba.hpp"
#include "engine/algorithms/forward_dynamics_factorization.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "engine/algorithms/lagrange_homogeneous.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"

namespace torqued {
namespace {

using test_support::relative_error;
using ::testing::HasSubstr;

constexpr double kAgreement = 1e-12;

ModelPtr load(const std::string& file, const BuildOptions& options = {}) {
  return build_model(read_urdf_file(std::string(TORQUED_TEST_DATA_DIR) + "/" + file), options);
}

std::string strict_error(const std::string& file) {
  try {
    load(file, BuildOptions{.warnings_are_errors = true});
  } catch (const ModelError& e) {
    return e.what();
  }
  ADD_FAILURE() << file << " loaded under strict checking";
  return {};
}

// A fixed, generic state: no angle or rate is special.
struct State {
  Eigen::VectorXd q, v, a, tau;
};

State state_of(const Model& model) {
  State s;
  s.q.resize(model.nv);
  s.v.resize(model.nv);
  s.a.resize(model.nv);
  s.tau.resize(model.nv);
  for (int k = 0; k < model.nv; ++k) {
    s.q[k] = 0.3 + 0.7 * k;
    s.v[k] = -0.5 + 0.4 * k;
    s.a[k] = 1.1 - 0.6 * k;
    s.tau[k] = 2.0 - 1.5 * k;
  }
  return s;
}

// Every algorithm on the model against the others, at one state.
void expect_algorithms_agree(const Model& model) {
  Data data(model);
  const State s = state_of(model);
  const Eigen::VectorXd tau = rnea(model, data, s.q, s.v, s.a);
  const Eigen::VectorXd bias = nonlinear_effects(model, data, s.q, s.v);
  const Eigen::MatrixXd mass = crba(model, data, s.q);
  EXPECT_LE(relative_error(mass * s.a + bias, tau), kAgreement) << "CRBA, RNEA";
  EXPECT_LE(relative_error(lagrange_homogeneous(model, data, s.q, s.v, s.a), tau), kAgreement)
      << "homogeneous-matrix Lagrangian, RNEA";

  const Eigen::VectorXd ddq = aba(model, data, s.q, s.v, s.tau);
  EXPECT_LE(relative_error(mass * ddq + bias, s.tau), kAgreement) << "ABA, CRBA";
  EXPECT_LE(relative_error(forward_dynamics_crba(model, data, s.q, s.v, s.tau), ddq), kAgreement)
      << "CRBA + LTDL, ABA";
  EXPECT_LE(relative_error(forward_dynamics_factorization(model, data, s.q, s.v, s.tau), ddq),
            kAgreement)
      << "innovations factorization, ABA";
  const Eigen::MatrixXd inverse = minverse(model, data, s.q);
  EXPECT_LE(relative_error(inverse * mass, Eigen::MatrixXd::Identity(model.nv, model.nv)),
            kAgreement)
      << "M^-1, CRBA";

  // Half the DOFs given their acceleration, the others their force.
  std::vector<DofInput> input(model.nv);
  for (int k = 0; k < model.nv; ++k) {
    input[k] = k % 2 == 0 ? DofInput::kAcceleration : DofInput::kForce;
  }
  hybrid_dynamics(model, data, s.q, s.v, s.a, s.tau, input);
  const Eigen::VectorXd hybrid_ddq = data.ddq, hybrid_tau = data.tau;
  EXPECT_LE(relative_error(mass * hybrid_ddq + bias, hybrid_tau), kAgreement) << "hybrid, CRBA";

  aba_derivatives(model, data, s.q, s.v, s.tau);
  EXPECT_LE(relative_error(data.workspace<AbaDerivativesWorkspace>().ddq_dtau, inverse), kAgreement)
      << "dABA/dtau, M^-1";
  // At q̈ = ABA(τ) the identity M ∂q̈/∂(q, v) = −∂τ/∂(q, v) holds with the RNEA derivatives
  // taken there, which aba_derivatives leaves in data.
  EXPECT_LE(relative_error(mass * data.workspace<AbaDerivativesWorkspace>().ddq_dq,
                           -data.workspace<RneaDerivativesWorkspace>().dtau_dq),
            kAgreement)
      << "dABA/dq, dRNEA/dq";
  EXPECT_LE(relative_error(mass * data.workspace<AbaDerivativesWorkspace>().ddq_dv,
                           -data.workspace<RneaDerivativesWorkspace>().dtau_dv),
            kAgreement)
      << "dABA/dv, dRNEA/dv";
}

TEST(DegenerateInertia, PointMassesOffTheirAxesLoadAndComputeForwardDynamics) {
  const ModelPtr model = load("point_mass_arm.urdf");
  // The forearm's tensor is zero (a point mass: nothing to warn about); the hand's carries
  // 2.4e-35 of off-diagonal noise, a principal moment of -2.4e-35 kg m².
  ASSERT_EQ(model->warnings.size(), 1u) << ::testing::PrintToString(model->warnings);
  EXPECT_THAT(model->warnings[0], HasSubstr("link 'hand'"));
  EXPECT_THAT(model->warnings[0], HasSubstr("-2.4e-35"));
  EXPECT_THAT(model->warnings[0], HasSubstr("kept as written"));
  expect_algorithms_agree(*model);
}

TEST(DegenerateInertia, PointMassOnTheAxisOfALeafMakesOnlyForwardDynamicsSingular) {
  const ModelPtr model = load("point_mass_on_axis.urdf");
  EXPECT_TRUE(model->warnings.empty()) << model->warnings.front();
  Data data(*model);
  const State s = state_of(*model);
  try {
    aba(*model, data, s.q, s.v, s.tau);
    ADD_FAILURE() << "ABA through a joint that moves no inertia";
  } catch (const SingularSystemError& e) {
    EXPECT_THAT(e.what(), HasSubstr("joint 'spin'"));
  }
  EXPECT_THROW(minverse(*model, data, s.q), SingularSystemError);
  EXPECT_THROW(forward_dynamics_crba(*model, data, s.q, s.v, s.tau), SingularSystemError);
  // Inverse dynamics and the mass matrix are defined. The spin column of M and the spin torque
  // are zero in exact arithmetic; rounding leaves a few ulps of the largest entries (FMA keeps
  // low bits of products that would cancel), so 16 ulps in any IEEE build.
  const Eigen::VectorXd tau = rnea(*model, data, s.q, s.v, s.a);
  const Eigen::VectorXd bias = nonlinear_effects(*model, data, s.q, s.v);
  const Eigen::MatrixXd mass = crba(*model, data, s.q);
  EXPECT_LE(relative_error(mass * s.a + bias, tau), kAgreement);
  const int spin = model->joints[model->find_joint("spin")].idx_v;
  const double ulps = 16 * std::numeric_limits<double>::epsilon();
  EXPECT_LE(mass.col(spin).cwiseAbs().maxCoeff(), ulps * mass.cwiseAbs().maxCoeff());
  EXPECT_LE(std::abs(tau[spin]), ulps * tau.cwiseAbs().maxCoeff());
}

TEST(DegenerateInertia, NearMasslessSensorLinkLoadsWithAWarningAndEveryAlgorithmAgrees) {
  const ModelPtr model = load("sensor_link.urdf");
  ASSERT_EQ(model->warnings.size(), 1u) << ::testing::PrintToString(model->warnings);
  EXPECT_THAT(model->warnings[0], HasSubstr("link 'imu_link'"));
  EXPECT_THAT(model->warnings[0], HasSubstr("-2e-11"));
  EXPECT_THAT(model->warnings[0], HasSubstr("joint 'shoulder'"));
  expect_algorithms_agree(*model);
}

TEST(DegenerateInertia, StrictCheckingRefusesTheFilesThatWarn) {
  EXPECT_THAT(strict_error("point_mass_arm.urdf"), HasSubstr("link 'hand'"));
  EXPECT_THAT(strict_error("sensor_link.urdf"), HasSubstr("link 'imu_link'"));
  EXPECT_NO_THROW(load("point_mass_on_axis.urdf", BuildOptions{.warnings_are_errors = true}));
}

}  // namespace
}  // namespace torqued
