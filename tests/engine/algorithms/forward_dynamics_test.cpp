// Hybrid dynamics, floating-base inverse dynamics, M⁻¹ and the three forward-dynamics algorithms
// (ABA, CRBA + sparse LᵀDL, the innovations factorization), on seeded random trees with every
// joint kind (tests/engine/support/random_tree.hpp) and on the Pinocchio reference files.
//
// Tolerances are relative, max|x − y| / max(1, max|y|), and stated per test. Anything that solves
// with M loses up to κ(M) ulps, and random trees reach κ(M) ~ 1e9, so those bars are
// 1e-12 + 1e-14 κ(M) as in properties_test.cpp; the fixed bars (1e-10 between the
// forward-dynamics algorithms, 1e-9 against the golden M⁻¹) are checked where κ allows them.
#include "engine/algorithms/forward_dynamics.hpp"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"
#include "engine/algorithms/forward_dynamics_crba.hpp"
#include "engine/algorithms/forward_dynamics_factorization.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "engine/algorithms/ltdl.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/build.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/golden_files.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

using test_support::relative_error;
using test_support::TreeCase;
std::string case_name(const ::testing::TestParamInfo<TreeCase>& info) {
  return test_support::tree_case_name(info.param);
}

using test_support::random_state;
using test_support::RandomState;

constexpr int kStatesPerTree = 3;

double condition(const Eigen::MatrixXd& mass) {
  if (mass.rows() == 0) return 1.0;
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(mass);
  return eig.eigenvalues().maxCoeff() / eig.eigenvalues().minCoeff();
}

// Bar for results obtained by solving with M: a few ulps times κ(M).
double solve_tolerance(double kappa) { return 1e-12 + 1e-14 * kappa; }

class RandomTreeTest : public ::testing::TestWithParam<TreeCase> {
 protected:
  void SetUp() override {
    test_support::RandomTreeOptions options;
    options.floating_base = GetParam().floating_base;
    options.min_links = GetParam().min_links;
    options.max_links = GetParam().max_links;
    model_ = build_model(test_support::random_tree_spec(GetParam().seed, options));
    data_ = std::make_unique<Data>(*model_);
    rng_.seed(GetParam().seed * 104729 + 3);
  }
  const Model& model() const { return *model_; }

  ModelPtr model_;
  std::unique_ptr<Data> data_;
  std::mt19937_64 rng_;
};

// Random masks: the completed (q̈, τ) satisfy both RNEA and ABA, with external forces.
TEST_P(RandomTreeTest, HybridDynamicsSatisfiesRneaAndAba) {
  if (model().nv == 0) GTEST_SKIP() << "no degrees of freedom";
  std::bernoulli_distribution coin(0.5);
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    std::vector<DofInput> mask(model().nv);
    for (DofInput& m : mask) m = coin(rng_) ? DofInput::kAcceleration : DofInput::kForce;
    hybrid_dynamics(model(), *data_, s.q, s.v, s.a, s.tau, mask, s.f_ext);
    const Eigen::VectorXd ddq = data_->ddq;
    const Eigen::VectorXd tau = data_->tau;
    for (int dof = 0; dof < model().nv; ++dof) {
      if (mask[dof] == DofInput::kAcceleration) {
        EXPECT_EQ(ddq[dof], s.a[dof]) << "given acceleration changed at DOF " << dof;
      } else {
        EXPECT_EQ(tau[dof], s.tau[dof]) << "given force changed at DOF " << dof;
      }
    }
    const double kappa = condition(crba(model(), *data_, s.q));
    const Eigen::VectorXd tau_rnea = rnea(model(), *data_, s.q, s.v, ddq, s.f_ext);
    EXPECT_LE(relative_error(tau_rnea, tau), solve_tolerance(kappa))
        << "state " << k << ", κ(M) = " << kappa;
    const Eigen::VectorXd ddq_aba = aba(model(), *data_, s.q, s.v, tau, s.f_ext);
    EXPECT_LE(relative_error(ddq_aba, ddq), solve_tolerance(kappa))
        << "state " << k << ", κ(M) = " << kappa;
  }
}

// All-force is ABA: the same passes (articulated_body.hpp) through another instantiation, which a
// compiler may contract into FMA differently, so a few ulps times κ(M), as for a solve. All-
// acceleration is RNEA computed in world instead of body coordinates: 1e-13 relative, a few ulps
// of the largest force (no solve is involved).
TEST_P(RandomTreeTest, HybridDynamicsReducesToAbaAndRnea) {
  if (model().nv == 0) GTEST_SKIP() << "no degrees of freedom";
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const std::vector<DofInput> all_force(model().nv, DofInput::kForce);
    hybrid_dynamics(model(), *data_, s.q, s.v, s.a, s.tau, all_force, s.f_ext);
    const Eigen::VectorXd ddq = data_->ddq;
    EXPECT_EQ(data_->tau, s.tau);
    EXPECT_LE(relative_error(ddq, aba(model(), *data_, s.q, s.v, s.tau, s.f_ext)),
              solve_tolerance(condition(crba(model(), *data_, s.q))));

    const std::vector<DofInput> all_acceleration(model().nv, DofInput::kAcceleration);
    hybrid_dynamics(model(), *data_, s.q, s.v, s.a, s.tau, all_acceleration, s.f_ext);
    const Eigen::VectorXd tau = data_->tau;
    EXPECT_EQ(data_->ddq, s.a);
    EXPECT_LE(relative_error(tau, rnea(model(), *data_, s.q, s.v, s.a, s.f_ext)), 1e-13);
  }
}

TEST_P(RandomTreeTest, HybridDynamicsRejectsAMaskOfTheWrongSize) {
  const RandomState s = random_state(model(), rng_);
  const std::vector<DofInput> mask(model().nv + 1, DofInput::kForce);
  EXPECT_THROW(hybrid_dynamics(model(), *data_, s.q, s.v, s.a, s.tau, mask), std::invalid_argument);
}

// Against hybrid dynamics with the root force-given at zero (the same problem solved by another
// recursion: 1e-12 + 1e-14 κ) and against ABA fed the resulting forces; models without a
// free-flyer root are refused.
TEST_P(RandomTreeTest, FloatingBaseInverseDynamics) {
  const RandomState s = random_state(model(), rng_);
  // Random fixed-base trees may also start with a free-flyer that carries the whole tree.
  const bool free_flyer_root = model().nbodies() > 1 &&
                               model().joints[1].type == JointType::kFreeFlyer &&
                               model().subtree_end[1] == model().nbodies();
  if (!free_flyer_root) {
    EXPECT_THROW(floating_base_inverse_dynamics(model(), *data_, s.q, s.v, s.a),
                 std::invalid_argument);
    return;
  }
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState st = random_state(model(), rng_);
    const double kappa = condition(crba(model(), *data_, st.q));
    floating_base_inverse_dynamics(model(), *data_, st.q, st.v, st.a, st.f_ext);
    const Eigen::VectorXd ddq = data_->ddq;
    const Eigen::VectorXd tau = data_->tau;
    EXPECT_TRUE(tau.head<6>().isZero(0.0));
    EXPECT_EQ(ddq.tail(model().nv - 6), st.a.tail(model().nv - 6));

    std::vector<DofInput> mask(model().nv, DofInput::kAcceleration);
    std::fill(mask.begin(), mask.begin() + 6, DofInput::kForce);
    Eigen::VectorXd zero_base = st.tau;
    zero_base.head<6>().setZero();
    hybrid_dynamics(model(), *data_, st.q, st.v, st.a, zero_base, mask, st.f_ext);
    EXPECT_LE(relative_error(ddq, data_->ddq), solve_tolerance(kappa)) << "κ(M) = " << kappa;
    EXPECT_LE(relative_error(tau, data_->tau), solve_tolerance(kappa)) << "κ(M) = " << kappa;

    EXPECT_LE(relative_error(aba(model(), *data_, st.q, st.v, tau, st.f_ext), ddq),
              solve_tolerance(kappa))
        << "κ(M) = " << kappa;
  }
}

// M⁻¹ M = I and M⁻¹ is symmetric; each bar is a few ulps times κ(M).
TEST_P(RandomTreeTest, MinverseInvertsTheMassMatrix) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const Eigen::MatrixXd mass = crba(model(), *data_, s.q);
    const double kappa = condition(mass);
    const Eigen::MatrixXd minv = minverse(model(), *data_, s.q);
    const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(model().nv, model().nv);
    EXPECT_LE(relative_error(minv * mass, identity), solve_tolerance(kappa)) << "κ = " << kappa;
    EXPECT_EQ(minv, minv.transpose());
    // The innovations factors give the same columns one right-hand side at a time.
    factorize_mass_matrix(model(), *data_, s.q);
    for (int j = 0; j < model().nv; ++j) {
      const Eigen::VectorXd column = solve_factorized(model(), *data_, identity.col(j));
      EXPECT_LE(relative_error(column, minv.col(j)), solve_tolerance(kappa)) << "column " << j;
    }
  }
}

// The sparse LᵀDL factors reproduce M (no solve: 1e-13 relative) and solve like a dense
// Cholesky (κ-scaled).
TEST_P(RandomTreeTest, SparseLtdlFactorsAndSolves) {
  if (model().nv == 0) GTEST_SKIP() << "no degrees of freedom";
  const RandomState s = random_state(model(), rng_);
  const Eigen::MatrixXd mass = crba(model(), *data_, s.q);
  const double kappa = condition(mass);
  ltdl_factorize(model(), *data_, mass);
  const Eigen::MatrixXd packed = data_->workspace<MassFactorWorkspace>().ltdl;
  Eigen::MatrixXd l = packed.triangularView<Eigen::StrictlyUpper>().transpose();
  l.diagonal().setOnes();
  const Eigen::MatrixXd rebuilt = l.transpose() * packed.diagonal().asDiagonal() * l;
  EXPECT_LE(relative_error(rebuilt, mass), 1e-13);
  Eigen::VectorXd x = s.tau;
  ltdl_solve(*data_, x);
  EXPECT_LE(relative_error(x, mass.llt().solve(s.tau)), solve_tolerance(kappa)) << "κ = " << kappa;
}

// ABA, CRBA + LᵀDL and the factorization agree: the 1e-10 where κ(M) ≤ 1e4 (the robots
// below), 1e-12 + 1e-14 κ otherwise.
TEST_P(RandomTreeTest, ForwardDynamicsAlgorithmsAgree) {
  for (int k = 0; k < kStatesPerTree; ++k) {
    const RandomState s = random_state(model(), rng_);
    const double kappa = condition(crba(model(), *data_, s.q));
    const double tol = std::max(1e-10, solve_tolerance(kappa));
    const Eigen::VectorXd by_aba =
        forward_dynamics(model(), *data_, s.q, s.v, s.tau, ForwardDynamicsAlgorithm::kAba);
    const Eigen::VectorXd by_crba =
        forward_dynamics(model(), *data_, s.q, s.v, s.tau, ForwardDynamicsAlgorithm::kCrba);
    const Eigen::VectorXd by_factorization = forward_dynamics(
        model(), *data_, s.q, s.v, s.tau, ForwardDynamicsAlgorithm::kFactorization);
    const Eigen::VectorXd by_auto = forward_dynamics(model(), *data_, s.q, s.v, s.tau);
    EXPECT_LE(relative_error(by_crba, by_aba), tol) << "κ(M) = " << kappa;
    EXPECT_LE(relative_error(by_factorization, by_aba), tol) << "κ(M) = " << kappa;
    EXPECT_LE(relative_error(by_auto, by_aba), tol) << "κ(M) = " << kappa;
  }
}

std::vector<TreeCase> tree_cases() {
  std::vector<TreeCase> cases;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) cases.push_back({seed, seed % 2 == 0, 1, 60});
  cases.push_back({101, false, 60, 60});
  cases.push_back({102, true, 60, 60});
  cases.push_back({201, false, 1, 1});
  cases.push_back({202, true, 1, 1});
  for (std::uint64_t seed = 203; seed <= 206; ++seed) cases.push_back({seed, seed % 2 == 0, 2, 5});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, RandomTreeTest, ::testing::ValuesIn(tree_cases()), case_name);

// ---- Pinocchio reference files -----------------------------------------------------------------

using nlohmann::json;

const std::filesystem::path kSharedDir = TORQUED_SHARED_DIR;

Eigen::VectorXd to_vector(const json& j) {
  Eigen::VectorXd x(j.size());
  for (Eigen::Index k = 0; k < x.size(); ++k) x[k] = j[k].get<double>();
  return x;
}

using test_support::golden_case_name;
using test_support::golden_files;

class GoldenTest : public ::testing::TestWithParam<std::string> {};

// M⁻¹ against Pinocchio's computeMinverse at 1e-9 relative (the README: two correct
// implementations agree to ~1e-11 at the worst conditioning, talos_reduced floating), and the
// three forward-dynamics algorithms against its ABA at the same bar. The MJCF references include
// the joints' armature A, which torqued does not model (golden_files.hpp: golden_armature): M⁻¹ is
// compared with the inverse of the reference's M less A, forward dynamics runs at the torque less
// A q̈, where the reference's q̈ is ours.
TEST_P(GoldenTest, MinverseAndForwardDynamics) {
  if (GetParam().empty()) GTEST_SKIP() << "no golden data in " << kSharedDir;
  std::ifstream in(kSharedDir / "golden" / GetParam());
  const json doc = json::parse(in);
  if (const std::string skip = test_support::unread_source_format(doc, GetParam()); !skip.empty()) {
    GTEST_SKIP() << skip;
  }
  const json& m = doc.at("model");
  const ModelPtr model = build_model(test_support::golden_model_spec(doc));
  const Eigen::VectorXd armature = test_support::golden_armature(doc);
  ASSERT_EQ(model->nv, m.at("nv").get<int>());
  // Our index of each golden q and v index, matched by joint name.
  std::vector<int> q_of(model->nq), v_of(model->nv);
  for (const json& j : m.at("joints")) {
    const int body = model->find_joint(j.at("name").get<std::string>());
    ASSERT_GT(body, 0) << j.at("name");
    const Joint& joint = model->joints[body];
    for (int k = 0; k < joint.nq; ++k) q_of[j.at("idx_q").get<int>() + k] = joint.idx_q + k;
    for (int k = 0; k < joint.nv; ++k) v_of[j.at("idx_v").get<int>() + k] = joint.idx_v + k;
  }
  Data data(*model);
  double worst_minv = 0.0;
  for (const json& st : doc.at("states")) {
    const Eigen::VectorXd gq = to_vector(st.at("q")), gv = to_vector(st.at("v"));
    const Eigen::VectorXd golden_aba = to_vector(st.at("aba"));
    const Eigen::VectorXd gtau = to_vector(st.at("tau")) - armature.cwiseProduct(golden_aba);
    Eigen::VectorXd q(model->nq), v(model->nv), tau(model->nv);
    for (int k = 0; k < model->nq; ++k) q[q_of[k]] = gq[k];
    for (int k = 0; k < model->nv; ++k) {
      v[v_of[k]] = gv[k];
      tau[v_of[k]] = gtau[k];
    }
    const Eigen::MatrixXd minv = minverse(*model, data, q);
    Eigen::MatrixXd ours(model->nv, model->nv);
    for (int r = 0; r < model->nv; ++r) {
      for (int c = 0; c < model->nv; ++c) ours(r, c) = minv(v_of[r], v_of[c]);
    }
    const double err =
        relative_error(ours, test_support::golden_minv_without_armature(st, armature));
    worst_minv = std::max(worst_minv, err);
    EXPECT_LE(err, 1e-9) << "state " << st.at("index");
    for (ForwardDynamicsAlgorithm algorithm :
         {ForwardDynamicsAlgorithm::kAba, ForwardDynamicsAlgorithm::kCrba,
          ForwardDynamicsAlgorithm::kFactorization, ForwardDynamicsAlgorithm::kAuto}) {
      const Eigen::VectorXd ddq = forward_dynamics(*model, data, q, v, tau, algorithm);
      Eigen::VectorXd in_golden_order(model->nv);
      for (int k = 0; k < model->nv; ++k) in_golden_order[k] = ddq[v_of[k]];
      EXPECT_LE(relative_error(in_golden_order, golden_aba), 1e-9)
          << "state " << st.at("index") << ", algorithm " << static_cast<int>(algorithm);
    }
  }
  RecordProperty("worst_minv_relative_error", std::to_string(worst_minv));
  std::cout << GetParam() << ": worst M⁻¹ relative error " << worst_minv << "\n";
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTest, ::testing::ValuesIn(golden_files()), golden_case_name);

}  // namespace
}  // namespace torqued
