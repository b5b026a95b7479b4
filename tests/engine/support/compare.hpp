// Comparisons the numerical tests share: every tolerance in them is relative to the size of the
// reference, max|x − y| / max(1, max|y|), the measure the golden data's README uses.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <limits>

namespace torqued::test_support {

inline double max_abs(const Eigen::MatrixXd& x) {
  return x.size() == 0 ? 0.0 : x.cwiseAbs().maxCoeff();
}

// Infinite when the shapes differ, so that a wrong size fails the comparison.
inline double relative_error(const Eigen::MatrixXd& x, const Eigen::MatrixXd& y) {
  if (x.rows() != y.rows() || x.cols() != y.cols()) return std::numeric_limits<double>::infinity();
  return max_abs(x - y) / std::max(1.0, max_abs(y));
}

}  // namespace torqued::test_support
