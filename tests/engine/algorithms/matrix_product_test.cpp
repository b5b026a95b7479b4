// The dense product kernel against Eigen's products: every size up to past two micro-tiles in
// each dimension (the row and column remainders included), W column- and row-major, C set or
// accumulated, with either sign.
#include "engine/algorithms/matrix_product.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cstdint>
#include <random>

namespace torqued {
namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Matrices of entries uniform in [-1, 1], from a seeded generator.
class RandomMatrices {
 public:
  explicit RandomMatrices(std::uint64_t seed) : rng_(seed) {}

  Eigen::MatrixXd operator()(int rows, int cols) {
    return Eigen::MatrixXd::NullaryExpr(rows, cols, [&] { return unit_(rng_); });
  }

 private:
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{-1.0, 1.0};
};

TEST(MatrixProductTest, MatchesEigenForEverySizeLayoutAndMode) {
  RandomMatrices random(5);
  for (int rows = 1; rows <= 19; ++rows) {
    for (int inner = 1; inner <= 10; inner += 3) {
      for (int cols = 1; cols <= 9; ++cols) {
        // A with a leading dimension past its rows, as the leading rows of a taller matrix.
        const Eigen::MatrixXd a_storage = random(rows + 3, inner);
        const auto a = a_storage.topRows(rows);
        const Eigen::MatrixXd w = random(inner, cols);
        const RowMajorMatrix w_row_major = w;
        const Eigen::MatrixXd start = random(rows, cols);
        for (const bool row_major : {false, true}) {
          for (const bool accumulate : {false, true}) {
            for (const double sign : {1.0, -1.0}) {
              Eigen::MatrixXd c = start;
              const matrix_product::View view =
                  row_major ? matrix_product::View{w_row_major.data(), cols, 1}
                            : matrix_product::View{w.data(), 1, inner};
              matrix_product::multiply(rows, inner, cols, a_storage.data(), rows + 3, view,
                                       c.data(), rows, sign, accumulate);
              const Eigen::MatrixXd expected =
                  (accumulate ? start : Eigen::MatrixXd::Zero(rows, cols)) + sign * a * w;
              EXPECT_LT((c - expected).cwiseAbs().maxCoeff(), 1e-14 * inner)
                  << rows << " x " << inner << " x " << cols << (row_major ? " row-major" : "")
                  << (accumulate ? " accumulate" : "") << " sign " << sign;
            }
          }
        }
      }
    }
  }
}

TEST(MatrixProductTest, UpperTriangleMatchesEigenAndLeavesTheRestBelowTheTiles) {
  RandomMatrices random(7);
  for (int size = 1; size <= 21; ++size) {
    for (int inner = 1; inner <= 10; inner += 3) {
      const Eigen::MatrixXd a = random(size, inner);
      const Eigen::MatrixXd w = random(inner, size);
      const Eigen::MatrixXd start = random(size, size);
      for (const bool accumulate : {false, true}) {
        Eigen::MatrixXd c = start;
        matrix_product::multiply_upper(size, inner, a.data(), size, {w.data(), 1, inner}, c.data(),
                                       size, -1.0, accumulate);
        const Eigen::MatrixXd expected =
            (accumulate ? start : Eigen::MatrixXd::Zero(size, size)) - a * w;
        for (int j = 0; j < size; ++j) {
          for (int i = 0; i <= j; ++i) {
            EXPECT_NEAR(c(i, j), expected(i, j), 1e-14 * inner) << size << " x " << inner;
          }
          // Below the diagonal, past the block of four columns that crosses it.
          for (int i = j / 4 * 4 + 4; i < size; ++i) {
            EXPECT_EQ(c(i, j), start(i, j)) << size << " x " << inner << " at " << i << ", " << j;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace torqued
