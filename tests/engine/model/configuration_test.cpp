// Tests engine/model/configuration.hpp's Jacobians of q ⊕ v against fourth-order central
// differences on the manifold, on random trees with every joint kind (a free-flyer root,
// free-flyers, spherical and planar joints inside the tree), at velocities whose rotation angles
// fall on both sides of the series' switch (t = 0.1), at zero and at several radians.
#include "engine/model/configuration.hpp"

#include <gtest/gtest.h>

#include <random>

#include "engine/model/build.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

// f' ≈ (8 (f(h) − f(−h)) − (f(2h) − f(−2h))) / 12h with h = 1e-4: truncation ~h⁴ |f⁽⁵⁾| ≈ 1e-16;
// rounding is difference()'s (a quaternion's logarithm, ~1e-12 absolute) over h, a few 1e-9 (3.7e-9
// measured). A wrong block (a sign, a transposed rotation, a missing coupling term) is off by
// ≳ 1e-3.
constexpr double kStep = 1e-4;
constexpr double kTolerance = 1e-7;

template <typename Perturbed>
Eigen::MatrixXd finite_difference(const Model& model, const Eigen::VectorXd& at,
                                  Perturbed&& perturbed) {
  Eigen::MatrixXd out(model.nv, model.nv);
  for (int k = 0; k < model.nv; ++k) {
    const Eigen::VectorXd e = Eigen::VectorXd::Unit(model.nv, k) * kStep;
    auto f = [&](const Eigen::VectorXd& d) { return difference(model, at, perturbed(d)); };
    out.col(k) = (8.0 * (f(e) - f(-e)) - (f(2.0 * e) - f(-2.0 * e))) / (12.0 * kStep);
  }
  return out;
}

class IntegrateJacobiansTest : public ::testing::TestWithParam<double> {};

TEST_P(IntegrateJacobiansTest, MatchFiniteDifferencesOnEveryJointKind) {
  const double speed = GetParam();
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    test_support::RandomTreeOptions options;
    options.min_links = 8;
    options.max_links = 14;
    options.floating_base = true;
    const ModelPtr model = build_model(test_support::random_tree_spec(seed, options));
    std::mt19937_64 rng(seed);
    const Eigen::VectorXd q = random_configuration(*model, rng);
    const Eigen::VectorXd v = speed * test_support::uniform_vector(rng, model->nv, -1.0, 1.0);
    const Eigen::VectorXd q_next = integrate(*model, q, v);

    Eigen::MatrixXd dq = Eigen::MatrixXd::Zero(model->nv, model->nv);
    Eigen::MatrixXd dv = Eigen::MatrixXd::Zero(model->nv, model->nv);
    integrate_jacobians(*model, v, dq, dv);

    const Eigen::MatrixXd dq_fd = finite_difference(*model, q_next, [&](const Eigen::VectorXd& d) {
      return integrate(*model, integrate(*model, q, d), v);
    });
    const Eigen::MatrixXd dv_fd = finite_difference(
        *model, q_next, [&](const Eigen::VectorXd& d) { return integrate(*model, q, v + d); });
    EXPECT_LT((dq - dq_fd).cwiseAbs().maxCoeff(), kTolerance) << "seed " << seed << "\n"
                                                              << dq << "\nfinite differences\n"
                                                              << dq_fd;
    EXPECT_LT((dv - dv_fd).cwiseAbs().maxCoeff(), kTolerance) << "seed " << seed << "\n"
                                                              << dv << "\nfinite differences\n"
                                                              << dv_fd;
  }
}

// Zero; angles within the series (at most 0.057 √3 = 0.099 rad); across the switch; up to 2.5 rad
// about each axis.
INSTANTIATE_TEST_SUITE_P(Speeds, IntegrateJacobiansTest,
                         ::testing::Values(0.0, 1e-7, 0.03, 0.057, 0.3, 1.0, 2.5));

TEST(IntegrateJacobiansTest, AreTheIdentityAtZeroVelocity) {
  test_support::RandomTreeOptions options;
  options.floating_base = true;
  const ModelPtr model = build_model(test_support::random_tree_spec(3, options));
  Eigen::MatrixXd dq = Eigen::MatrixXd::Zero(model->nv, model->nv);
  Eigen::MatrixXd dv = Eigen::MatrixXd::Zero(model->nv, model->nv);
  integrate_jacobians(*model, Eigen::VectorXd::Zero(model->nv), dq, dv);
  EXPECT_TRUE(dq.isIdentity(0.0));
  EXPECT_TRUE(dv.isIdentity(0.0));
}

}  // namespace
}  // namespace torqued
