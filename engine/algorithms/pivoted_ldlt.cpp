// LDLᵀ with diagonal pivoting and the minimum-norm solve (Higham 2002, §10.3; see the header).
// Step j picks the largest remaining diagonal entry as pivot, swaps it to position j and
// eliminates: l = a(j+1.., j) / d, a(j+1.., j+1..) −= d l lᵀ. The remaining diagonal entries are
// the pivots still to come, so the first one below the tolerance ends the factorization: the
// rest of the Schur complement is zero to rounding. Sizes here are tens of rows at most, so the
// loops are written out and touch only the caller's memory.
#include "engine/algorithms/pivoted_ldlt.hpp"

#include <algorithm>
#include <utility>

namespace torqued {

int pivoted_ldlt_factorize(Eigen::Ref<Eigen::MatrixXd> a, Eigen::Ref<Eigen::VectorXi> permutation,
                           double scale) {
  const int n = static_cast<int>(a.rows());
  for (int i = 0; i < n; ++i) permutation[i] = i;
  if (n == 0) return 0;
  const double threshold = kPivotedLdltRankTolerance * std::max(a.diagonal().maxCoeff(), scale);
  for (int j = 0; j < n; ++j) {
    int pivot = j;
    for (int i = j + 1; i < n; ++i) {
      if (a(i, i) > a(pivot, pivot)) pivot = i;
    }
    if (!(a(pivot, pivot) > threshold)) return j;
    if (pivot != j) {
      a.row(j).swap(a.row(pivot));
      a.col(j).swap(a.col(pivot));
      std::swap(permutation[j], permutation[pivot]);
    }
    const double d = a(j, j);
    const double inv_d = 1.0 / d;
    for (int i = j + 1; i < n; ++i) a(i, j) *= inv_d;
    // Full (not just lower) trailing update: later pivots swap whole rows and columns.
    for (int c = j + 1; c < n; ++c) {
      const double dl = d * a(c, j);
      for (int i = j + 1; i < n; ++i) a(i, c) -= a(i, j) * dl;
      a(j, c) = a(c, j);
    }
  }
  return n;
}

namespace {

// y ← L⁻¹ y for the unit lower triangle of the first rows of `l`.
void forward_unit_lower(const Eigen::Ref<const Eigen::MatrixXd>& l, double* y, int rows) {
  for (int i = 0; i < rows; ++i) {
    double yi = y[i];
    for (int j = 0; j < i; ++j) yi -= l(i, j) * y[j];
    y[i] = yi;
  }
}

// y ← L⁻ᵀ y.
void backward_unit_lower_transposed(const Eigen::Ref<const Eigen::MatrixXd>& l, double* y,
                                    int rows) {
  for (int i = rows - 1; i >= 0; --i) {
    double yi = y[i];
    for (int j = i + 1; j < rows; ++j) yi -= l(j, i) * y[j];
    y[i] = yi;
  }
}

}  // namespace

void pivoted_ldlt_solve(const Eigen::Ref<const Eigen::MatrixXd>& factors,
                        const Eigen::Ref<const Eigen::VectorXi>& permutation, int rank,
                        Eigen::Ref<Eigen::VectorXd> x, Eigen::Ref<Eigen::MatrixXd> scratch,
                        Eigen::Ref<Eigen::VectorXd> work) {
  const int n = static_cast<int>(factors.rows());
  double* pb = work.data();  // P b, then P x
  for (int i = 0; i < n; ++i) pb[i] = x[permutation[i]];
  if (rank == n) {
    forward_unit_lower(factors, pb, n);
    for (int i = 0; i < n; ++i) pb[i] /= factors(i, i);
    backward_unit_lower_transposed(factors, pb, n);
  } else {
    // y = Wᵀ P b
    double* y = pb + n;
    for (int i = 0; i < rank; ++i) {
      double yi = pb[i];
      for (int k = i + 1; k < n; ++k) yi += factors(k, i) * pb[k];
      y[i] = yi;
    }
    // G = Wᵀ W (W(k, i): 1 on the diagonal, L below it, 0 above), factored unpivoted: it is
    // positive definite and well conditioned, since pivoting bounds |L(k, i)| by 1.
    for (int i = 0; i < rank; ++i) {
      for (int j = 0; j <= i; ++j) {
        double g = j == i ? 1.0 : factors(i, j);  // the k = i term, W(i, i) W(i, j)
        for (int k = i + 1; k < n; ++k) g += factors(k, i) * factors(k, j);
        scratch(i, j) = g;
      }
    }
    for (int j = 0; j < rank; ++j) {
      for (int c = j + 1; c < rank; ++c) {
        const double l = scratch(c, j) / scratch(j, j);
        for (int i = c; i < rank; ++i) scratch(i, c) -= l * scratch(i, j);
        scratch(c, j) = l;
      }
    }
    const auto solve_gram = [&] {
      forward_unit_lower(scratch, y, rank);
      for (int i = 0; i < rank; ++i) y[i] /= scratch(i, i);
      backward_unit_lower_transposed(scratch, y, rank);
    };
    solve_gram();
    for (int i = 0; i < rank; ++i) y[i] /= factors(i, i);
    solve_gram();
    for (int k = 0; k < n; ++k) {
      double xk = k < rank ? y[k] : 0.0;
      for (int i = 0; i < std::min(k, rank); ++i) xk += factors(k, i) * y[i];
      pb[k] = xk;
    }
  }
  for (int i = 0; i < n; ++i) x[permutation[i]] = pb[i];
}

}  // namespace torqued
