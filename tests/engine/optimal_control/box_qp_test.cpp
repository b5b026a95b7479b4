// The box-constrained QP against its optimality conditions on random problems: x inside the box,
// the gradient H x + q zero on the free coordinates, pushing outwards on the clamped ones, and
// H_ff⁻¹ the inverse of the free block.
#include "engine/optimal_control/box_qp.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

namespace torqued {
namespace {

TEST(BoxQpTest, MeetsTheOptimalityConditionsOnRandomProblems) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int n = 1; n <= 8; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      const Eigen::MatrixXd root = Eigen::MatrixXd::NullaryExpr(n, n, [&] { return unit(rng); });
      const Eigen::MatrixXd h = root * root.transpose() + 0.1 * Eigen::MatrixXd::Identity(n, n);
      const Eigen::VectorXd q = 3.0 * Eigen::VectorXd::NullaryExpr(n, [&] { return unit(rng); });
      const Eigen::VectorXd lower =
          -Eigen::VectorXd::NullaryExpr(n, [&] { return 0.5 + unit(rng) * 0.4; });
      Eigen::VectorXd upper =
          Eigen::VectorXd::NullaryExpr(n, [&] { return 0.5 + unit(rng) * 0.4; });
      upper[0] = std::numeric_limits<double>::infinity();  // one side unbounded
      BoxQp qp(n);
      const Eigen::VectorXd start = Eigen::VectorXd::NullaryExpr(n, [&] { return unit(rng); });
      ASSERT_TRUE(qp.solve(h, q, lower, upper, start, {.gradient_threshold = 1e-10}));
      const Eigen::VectorXd& x = qp.x();
      const Eigen::VectorXd gradient = h * x + q;
      for (int i = 0; i < n; ++i) {
        ASSERT_GE(x[i], lower[i]);
        ASSERT_LE(x[i], upper[i]);
        if (x[i] == lower[i]) {
          EXPECT_GT(gradient[i], -1e-9);
        } else if (x[i] == upper[i]) {
          EXPECT_LT(gradient[i], 1e-9);
        } else {
          EXPECT_NEAR(gradient[i], 0.0, 1e-9);
        }
      }
      const std::vector<int>& free = qp.free();
      Eigen::MatrixXd h_ff(free.size(), free.size());
      for (std::size_t i = 0; i < free.size(); ++i) {
        for (std::size_t j = 0; j < free.size(); ++j) h_ff(i, j) = h(free[i], free[j]);
      }
      if (!free.empty()) {
        EXPECT_LT((qp.free_inverse() * h_ff - Eigen::MatrixXd::Identity(free.size(), free.size()))
                      .cwiseAbs()
                      .maxCoeff(),
                  1e-10);
      }
    }
  }
}

}  // namespace
}  // namespace torqued
