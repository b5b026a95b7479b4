// RNEA, ABA and generalized-gravity derivatives (engine/algorithms/{rnea,aba,
// generalized_gravity}_derivatives.hpp) against
//  - the Pinocchio 3.7 reference (../shared/golden): drnea_dq, drnea_dv at (q, v, a) and
//    daba_dq, daba_dv at (q, v, tau) for every file and state, plus M and M⁻¹;
//  - central finite differences on the configuration manifold (q ⊕ h e_k through integrate()),
//    on seeded random trees with every joint kind, fixed and floating bases, external forces on;
//  - the other algorithms: ∂τ/∂q̈ = M (CRBA), ∂q̈/∂τ = M⁻¹, q̈ = ABA, τ = RNEA.
// Errors are max|x − y| / max(1, max|y|) and each test states its bar and why.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/generalized_gravity_derivatives.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/golden_files.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

using test_support::relative_error;

using nlohmann::json;

using test_support::golden_case_name;
using test_support::golden_files;
using test_support::kGoldenDir;

Eigen::MatrixXd to_matrix(const json& j) {
  const auto rows = static_cast<Eigen::Index>(j.size());
  const bool is_vector = rows > 0 && !j[0].is_array();
  const auto cols = is_vector ? Eigen::Index{1} : static_cast<Eigen::Index>(j[0].size());
  Eigen::MatrixXd x(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    for (Eigen::Index c = 0; c < cols; ++c) {
      x(r, c) = is_vector ? j[r].get<double>() : j[r][c].get<double>();
    }
  }
  return x;
}

// ---- Golden reference --------------------------------------------------------------------------

// Tolerance 1e-8 (the bar). The README bounds the agreement of two correct
// implementations at ~1e-13 relative for the RNEA derivatives and ~1e-11 for the ABA ones
// (conditioning proxy max|M⁻¹|·max|M| ≤ 8.3e4), so a pass here leaves a wide margin while any
// wrong term (a missing Coriolis or gravity contribution is ≥ 1e-3 relative) fails.
//
// The MJCF references include the joints' armature A (golden_files.hpp: golden_armature), which
// torqued does not model. RNEA's derivatives do not depend on it; M and RNEA are compared with the
// reference's less A and A a. ABA and its derivatives are taken at the torque less A q̈, where
// the reference's q̈ is ours; there (M + A) ∂q̈/∂x is the same as our M ∂q̈/∂x, so our derivatives
// are the reference's plus M⁻¹ A times them, with M⁻¹ the inverse of the reference's M less A.
constexpr double kGoldenTol = 1e-8;

class GoldenDerivativesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam().empty()) GTEST_SKIP() << "no golden data in " << kGoldenDir;
    std::ifstream in(kGoldenDir / GetParam());
    doc_ = json::parse(in);
    if (const std::string skip = test_support::unread_source_format(doc_, GetParam());
        !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    const json& m = doc_.at("model");
    model_ = build_model(test_support::golden_model_spec(doc_));
    armature_ = test_support::golden_armature(doc_);
    // The reference's q/v layout, mapped to ours by joint name.
    q_of_golden_.assign(m.at("nq").get<int>(), -1);
    v_of_golden_.assign(m.at("nv").get<int>(), -1);
    for (const json& j : m.at("joints")) {
      const int body = model_->find_joint(j.at("name").get<std::string>());
      ASSERT_GT(body, 0) << j.at("name");
      const Joint& joint = model_->joints[body];
      for (int k = 0; k < joint.nq; ++k)
        q_of_golden_[j.at("idx_q").get<int>() + k] = joint.idx_q + k;
      for (int k = 0; k < joint.nv; ++k)
        v_of_golden_[j.at("idx_v").get<int>() + k] = joint.idx_v + k;
    }
    ASSERT_EQ(model_->nv, static_cast<int>(v_of_golden_.size()));
    data_ = std::make_unique<Data>(*model_);
  }

  static Eigen::VectorXd ours(const Eigen::VectorXd& x, const std::vector<int>& map) {
    Eigen::VectorXd y(x.size());
    for (std::size_t k = 0; k < map.size(); ++k) y[map[k]] = x[static_cast<Eigen::Index>(k)];
    return y;
  }
  static Eigen::VectorXd ours(const json& j, const std::vector<int>& map) {
    return ours(Eigen::VectorXd(to_matrix(j)), map);
  }
  Eigen::MatrixXd golden_layout(const Eigen::MatrixXd& x) const {
    const auto n = static_cast<Eigen::Index>(v_of_golden_.size());
    Eigen::MatrixXd y(x.rows() == 1 ? 1 : n, n);
    for (Eigen::Index r = 0; r < y.rows(); ++r) {
      for (Eigen::Index c = 0; c < n; ++c) {
        y(r, c) = x.rows() == 1 ? x(0, v_of_golden_[c]) : x(v_of_golden_[r], v_of_golden_[c]);
      }
    }
    return y;
  }

  json doc_;
  ModelPtr model_;
  std::unique_ptr<Data> data_;
  std::vector<int> q_of_golden_, v_of_golden_;
  Eigen::VectorXd armature_;  // of the reference, in golden v order
};

TEST_P(GoldenDerivativesTest, RneaDerivatives) {
  double worst_dq = 0.0, worst_dv = 0.0, worst_m = 0.0;
  for (const json& st : doc_.at("states")) {
    SCOPED_TRACE("state " + std::to_string(st.at("index").get<int>()));
    const RneaDerivativesWorkspace& d =
        rnea_derivatives(*model_, *data_, ours(st.at("q"), q_of_golden_),
                         ours(st.at("v"), v_of_golden_), ours(st.at("a"), v_of_golden_));
    Eigen::MatrixXd mass = to_matrix(st.at("M"));
    mass.diagonal() -= armature_;
    const Eigen::VectorXd tau =
        to_matrix(st.at("rnea")) - armature_.cwiseProduct(to_matrix(st.at("a")));
    const double e_dq = relative_error(golden_layout(d.dtau_dq), to_matrix(st.at("drnea_dq")));
    const double e_dv = relative_error(golden_layout(d.dtau_dv), to_matrix(st.at("drnea_dv")));
    const double e_m =
        relative_error(golden_layout(data_->workspace<MassMatrixWorkspace>().M), mass);
    const double e_tau = relative_error(golden_layout(data_->tau.transpose()), tau.transpose());
    EXPECT_LE(e_dq, kGoldenTol) << "drnea_dq";
    EXPECT_LE(e_dv, kGoldenTol) << "drnea_dv";
    EXPECT_LE(e_m, kGoldenTol) << "M";
    EXPECT_LE(e_tau, kGoldenTol) << "rnea";
    worst_dq = std::max(worst_dq, e_dq);
    worst_dv = std::max(worst_dv, e_dv);
    worst_m = std::max(worst_m, e_m);
  }
  std::printf("[ errors   ] %s: drnea_dq %.2e, drnea_dv %.2e, M %.2e\n", GetParam().c_str(),
              worst_dq, worst_dv, worst_m);
}

TEST_P(GoldenDerivativesTest, AbaDerivatives) {
  double worst_dq = 0.0, worst_dv = 0.0, worst_minv = 0.0;
  for (const json& st : doc_.at("states")) {
    SCOPED_TRACE("state " + std::to_string(st.at("index").get<int>()));
    const Eigen::VectorXd ddq = to_matrix(st.at("aba"));
    const Eigen::VectorXd tau = to_matrix(st.at("tau")) - armature_.cwiseProduct(ddq);
    const AbaDerivativesWorkspace& d =
        aba_derivatives(*model_, *data_, ours(st.at("q"), q_of_golden_),
                        ours(st.at("v"), v_of_golden_), ours(tau, v_of_golden_));
    const Eigen::MatrixXd minv = test_support::golden_minv_without_armature(st, armature_);
    const auto ours_from_reference = [&](const Eigen::MatrixXd& reference) {
      return Eigen::MatrixXd(reference + minv * armature_.asDiagonal() * reference);
    };
    const double e_dq =
        relative_error(golden_layout(d.ddq_dq), ours_from_reference(to_matrix(st.at("daba_dq"))));
    const double e_dv =
        relative_error(golden_layout(d.ddq_dv), ours_from_reference(to_matrix(st.at("daba_dv"))));
    const double e_minv = relative_error(golden_layout(d.ddq_dtau), minv);
    const double e_ddq = relative_error(golden_layout(data_->ddq.transpose()), ddq.transpose());
    EXPECT_LE(e_dq, kGoldenTol) << "daba_dq";
    EXPECT_LE(e_dv, kGoldenTol) << "daba_dv";
    EXPECT_LE(e_minv, kGoldenTol) << "Minv";
    EXPECT_LE(e_ddq, kGoldenTol) << "aba";
    worst_dq = std::max(worst_dq, e_dq);
    worst_dv = std::max(worst_dv, e_dv);
    worst_minv = std::max(worst_minv, e_minv);
  }
  std::printf("[ errors   ] %s: daba_dq %.2e, daba_dv %.2e, Minv %.2e\n", GetParam().c_str(),
              worst_dq, worst_dv, worst_minv);
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenDerivativesTest, ::testing::ValuesIn(golden_files()),
                         golden_case_name);

// ---- Random trees ------------------------------------------------------------------------------

struct TreeCase {
  std::uint64_t seed;
  bool floating_base;
};

std::vector<TreeCase> tree_cases() {
  std::vector<TreeCase> cases;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    cases.push_back({seed, false});
    cases.push_back({seed + 100, true});
  }
  return cases;
}

std::string tree_name(const ::testing::TestParamInfo<TreeCase>& info) {
  return "seed" + std::to_string(info.param.seed) +
         (info.param.floating_base ? "_floating" : "_fixed");
}

class RandomTreeDerivativesTest : public ::testing::TestWithParam<TreeCase> {
 protected:
  void SetUp() override {
    test_support::RandomTreeOptions options;
    // Large enough that every joint kind appears (cover_every_kind) and chains are several
    // joints deep; small enough that M stays well conditioned for the finite differences of
    // q̈ (random 60-link trees reach κ(M) ~ 1e9, which no finite-difference bar survives).
    options.min_links = 10;
    options.max_links = 16;
    options.floating_base = GetParam().floating_base;
    model_ = build_model(test_support::random_tree_spec(GetParam().seed, options));
    data_ = std::make_unique<Data>(*model_);
    std::mt19937_64 rng(GetParam().seed * 7919);
    state_ = test_support::random_state(*model_, rng);
  }

  const Model& model() const { return *model_; }

  ModelPtr model_;
  std::unique_ptr<Data> data_;
  test_support::RandomState state_;
};

// Fourth-order central differences with step h on the manifold (q ⊕ t e_k for t = ±h, ±2h lie on
// one geodesic of integrate()): f' ≈ (8 (f(h) − f(−h)) − (f(2h) − f(−2h))) / 12h. The truncation
// error is ~h⁴ |f⁽⁵⁾| ≈ 1e-16 and the rounding error ~ε |f| / h: with h = 1e-4 that is ≲ 1e-10
// relative for τ and ≲ 1e-8 for q̈ (amplified by κ(M), up to ~1e4 on these trees). The bar 1e-6
// separates a correct derivative from a wrong one (a dropped term is ≳ 1e-3 relative).
constexpr double kStep = 1e-4;
constexpr double kFiniteDifferenceTol = 1e-6;

template <typename Step, typename F>
Eigen::MatrixXd finite_difference(int nv, Step&& step, F&& f) {
  Eigen::MatrixXd out(f(step(Eigen::VectorXd::Zero(nv))).size(), nv);
  for (int k = 0; k < nv; ++k) {
    const Eigen::VectorXd e = Eigen::VectorXd::Unit(nv, k) * kStep;
    out.col(k) = (8.0 * (f(step(e)) - f(step(-e))) - (f(step(2.0 * e)) - f(step(-2.0 * e)))) /
                 (12.0 * kStep);
  }
  return out;
}

template <typename F>
Eigen::MatrixXd finite_difference_q(const Model& model, const Eigen::VectorXd& q, F&& f) {
  return finite_difference(
      model.nv, [&](const Eigen::VectorXd& dq) { return integrate(model, q, dq); }, f);
}

template <typename F>
Eigen::MatrixXd finite_difference_v(const Model& model, const Eigen::VectorXd& v, F&& f) {
  return finite_difference(
      model.nv, [&](const Eigen::VectorXd& dv) -> Eigen::VectorXd { return v + dv; }, f);
}

TEST_P(RandomTreeDerivativesTest, RneaDerivativesMatchFiniteDifferences) {
  const test_support::RandomState& s = state_;
  Data scratch(model());
  const auto tau_of_q = [&](const Eigen::VectorXd& q) -> Eigen::VectorXd {
    return rnea(model(), scratch, q, s.v, s.a, s.f_ext);
  };
  const auto tau_of_v = [&](const Eigen::VectorXd& v) -> Eigen::VectorXd {
    return rnea(model(), scratch, s.q, v, s.a, s.f_ext);
  };
  rnea_derivatives(model(), *data_, s.q, s.v, s.a, s.f_ext);
  const double e_dq = relative_error(data_->workspace<RneaDerivativesWorkspace>().dtau_dq,
                                     finite_difference_q(model(), s.q, tau_of_q));
  const double e_dv = relative_error(data_->workspace<RneaDerivativesWorkspace>().dtau_dv,
                                     finite_difference_v(model(), s.v, tau_of_v));
  EXPECT_LE(e_dq, kFiniteDifferenceTol);
  EXPECT_LE(e_dv, kFiniteDifferenceTol);
  std::printf("[ errors   ] nv %d: dtau_dq %.2e, dtau_dv %.2e\n", model().nv, e_dq, e_dv);
}

TEST_P(RandomTreeDerivativesTest, AbaDerivativesMatchFiniteDifferences) {
  const test_support::RandomState& s = state_;
  Data scratch(model());
  const auto ddq_of_q = [&](const Eigen::VectorXd& q) -> Eigen::VectorXd {
    return aba(model(), scratch, q, s.v, s.tau, s.f_ext);
  };
  const auto ddq_of_v = [&](const Eigen::VectorXd& v) -> Eigen::VectorXd {
    return aba(model(), scratch, s.q, v, s.tau, s.f_ext);
  };
  aba_derivatives(model(), *data_, s.q, s.v, s.tau, s.f_ext);
  const double e_dq = relative_error(data_->workspace<AbaDerivativesWorkspace>().ddq_dq,
                                     finite_difference_q(model(), s.q, ddq_of_q));
  const double e_dv = relative_error(data_->workspace<AbaDerivativesWorkspace>().ddq_dv,
                                     finite_difference_v(model(), s.v, ddq_of_v));
  EXPECT_LE(e_dq, kFiniteDifferenceTol);
  EXPECT_LE(e_dv, kFiniteDifferenceTol);
  std::printf("[ errors   ] nv %d: ddq_dq %.2e, ddq_dv %.2e\n", model().nv, e_dq, e_dv);
}

// The by-products agree with the algorithms that compute them directly, to rounding: 1e-11 for
// τ and M (sums of the same products in another order, entries up to ~1e3), and for q̈ and M⁻¹
// 1e-9, which leaves room for κ(M) ≲ 1e6 times the rounding of M.
TEST_P(RandomTreeDerivativesTest, ByProductsMatchRneaCrbaAndAba) {
  const test_support::RandomState& s = state_;
  Data other(model());
  rnea_derivatives(model(), *data_, s.q, s.v, s.a, s.f_ext);
  EXPECT_LE(relative_error(data_->tau, rnea(model(), other, s.q, s.v, s.a, s.f_ext)), 1e-11);
  const Eigen::MatrixXd mass = crba(model(), other, s.q);
  EXPECT_LE(relative_error(data_->workspace<MassMatrixWorkspace>().M, mass), 1e-11) << "∂τ/∂q̈ = M";

  aba_derivatives(model(), *data_, s.q, s.v, s.tau, s.f_ext);
  EXPECT_LE(relative_error(data_->ddq, aba(model(), other, s.q, s.v, s.tau, s.f_ext)), 1e-9);
  EXPECT_LE(relative_error(data_->workspace<AbaDerivativesWorkspace>().ddq_dtau, mass.inverse()),
            1e-9)
      << "∂q̈/∂τ = M⁻¹";
  EXPECT_LE(relative_error(data_->workspace<AbaDerivativesWorkspace>().ddq_dtau * mass,
                           Eigen::MatrixXd::Identity(model().nv, model().nv)),
            1e-9);
}

// g(q) and ∂g/∂q of the gravity-only pass (and g alone from the bodies it placed) are RNEA's at
// (q, 0, 0) and its derivatives there, to
// rounding (1e-11, as above: the same products summed in another order), and ∂g/∂q matches the
// finite differences of generalized_gravity() to the bar above.
TEST_P(RandomTreeDerivativesTest, GeneralizedGravityDerivativesMatchRneaDerivatives) {
  const test_support::RandomState& s = state_;
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model().nv);
  Data other(model());
  const Eigen::MatrixXd expected = rnea_derivatives(model(), other, s.q, zero, zero).dtau_dq;
  const Eigen::VectorXd gravity = other.tau;
  const Eigen::MatrixXd dg_dq = generalized_gravity_derivatives(model(), *data_, s.q).dtau_dq;
  EXPECT_LE(relative_error(data_->tau, gravity), 1e-11) << "g(q)";
  // g alone, from the placements the derivatives left.
  EXPECT_LE(relative_error(placed_generalized_gravity(model(), *data_), gravity), 1e-11);
  const double e_rnea = relative_error(dg_dq, expected);
  EXPECT_LE(e_rnea, 1e-11) << "∂g/∂q against the RNEA derivatives at (q, 0, 0)";
  const auto g_of_q = [&](const Eigen::VectorXd& q) -> Eigen::VectorXd {
    return generalized_gravity(model(), other, q);
  };
  const double e_fd = relative_error(dg_dq, finite_difference_q(model(), s.q, g_of_q));
  EXPECT_LE(e_fd, kFiniteDifferenceTol);
  std::printf("[ errors   ] nv %d: dg_dq %.2e against RNEA's, %.2e against differences\n",
              model().nv, e_rnea, e_fd);
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, RandomTreeDerivativesTest, ::testing::ValuesIn(tree_cases()),
                         tree_name);

}  // namespace
}  // namespace torqued
