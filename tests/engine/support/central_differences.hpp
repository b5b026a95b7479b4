// Fourth-order central differences of a vector function along a set of directions, the tests'
// reference for analytic derivatives:
//   ∂f/∂x_k ≈ (8 (f(h) − f(−h)) − (f(2h) − f(−2h))) / 12h,   f(h) = moved(k, h),
// truncation ~h⁴ |f⁽⁵⁾| and rounding ~ε |f| / h.
#pragma once

#include <Eigen/Core>
#include <utility>

namespace torqued::test_support {

// Column k: the derivative along direction k of the value `moved(k, h)` returns (a vector of the
// same size for every k and h).
template <typename Moved>
Eigen::MatrixXd central_differences(int directions, double step, Moved&& moved) {
  Eigen::MatrixXd out;
  for (int k = 0; k < directions; ++k) {
    const Eigen::VectorXd p1 = moved(k, step), m1 = moved(k, -step);
    const Eigen::VectorXd p2 = moved(k, 2 * step), m2 = moved(k, -2 * step);
    if (k == 0) out.resize(p1.size(), directions);
    out.col(k) = (8.0 * (p1 - m1) - (p2 - m2)) / (12.0 * step);
  }
  return out;
}

// The same for a pair of vector values, (f, g) = moved(k, h): the derivatives of f, and of g.
template <typename Moved>
std::pair<Eigen::MatrixXd, Eigen::MatrixXd> central_differences_of_pair(int directions, double step,
                                                                        Moved&& moved) {
  Eigen::Index first = 0;
  const Eigen::MatrixXd stacked = central_differences(directions, step, [&](int k, double h) {
    const auto [f, g] = moved(k, h);
    first = f.size();
    Eigen::VectorXd out(f.size() + g.size());
    out << f, g;
    return out;
  });
  return {stacked.topRows(first), stacked.bottomRows(stacked.rows() - first)};
}

}  // namespace torqued::test_support
