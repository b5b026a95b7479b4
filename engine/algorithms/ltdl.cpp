// Sparse LᵀDL factorization and solve (Featherstone 2008, §6.5, Tables 6.3 and 6.4). With λ(k)
// the parent of DOF k (data.dof_parent), row k of L and of M have non-zeros only at k's
// ancestors, and eliminating DOFs leaves-first creates no fill-in outside that pattern:
//   for k = n..1:                      (Table 6.3)
//     for each ancestor i of k:        a = M_ki / M_kk
//       for each ancestor-or-self j of i:  M_ij −= a M_kj
//       M_ki = a
// leaving L below the diagonal and D on it. Solving Lᵀ D L x = b is then (Table 6.4)
//   for i = n..1: for each ancestor j of i: x_j −= L_ij x_i      (Lᵀ)
//   x_i /= D_ii                                                  (D)
//   for i = 1..n: for each ancestor j of i: x_i −= L_ij x_j      (L)
// The cost is Σ_k depth(k)² for the factorization and Σ_k depth(k) per solve instead of n³/3 and
// n²: a branched robot (legs, arms) has many zeros. Entries are kept in the upper triangle
// (M_ki at (i, k)) so that every inner loop walks down a column of the column-major matrix.
#include "engine/algorithms/ltdl.hpp"

#include <cassert>
#include <cmath>
#include <limits>

#include "engine/algorithms/articulated_body.hpp"

namespace torqued {

namespace {

// Ulps of M's largest diagonal entry below which a pivot is rounding noise.
constexpr double kRoundingUlps = 8.0;

}  // namespace

void ltdl_factorize(const Model& model, Data& data, const Eigen::MatrixXd& mass) {
  assert(fits(model, data) && mass.rows() == model.nv && mass.cols() == model.nv);
  data.bind(model, kLtdlWorkspaces);
  const int nv = model.nv;
  const int* parent = data.dof_parent.data();
  Eigen::MatrixXd& ltdl = data.workspace<MassFactorWorkspace>().ltdl;
  ltdl.triangularView<Eigen::Upper>() = mass;
  double* h = ltdl.data();
  const auto at = [h, nv](int row, int col) -> double& {
    return h[row + static_cast<std::ptrdiff_t>(col) * nv];
  };
  // A joint that moves no inertia leaves M_kk and its pivot at zero in exact arithmetic, and at a
  // few ulps of M's largest entries in floating point (more with FMA, which keeps the low bits of
  // products that would cancel): neither a relative bound on M_kk nor zero tells it then.
  const double rounding = kRoundingUlps * std::numeric_limits<double>::epsilon() *
                          (nv > 0 ? mass.diagonal().maxCoeff() : 0.0);
  InterruptionPoll poll(data.interruption);
  for (int k = nv - 1; k >= 0; --k) {
    const double d = at(k, k);
    // D_kk is the inertia joint k drives with its descendants articulated: ABA's pivot, held to
    // the same relative bound, and above the rounding of M.
    if (!(d > articulated::kSingularPivot * mass(k, k)) || !(d > rounding) || !std::isfinite(d)) {
      articulated::throw_singular(model, model.body_of_v[k]);
    }
    const double inv_d = 1.0 / d;
    int updates = 0;
    for (int i = parent[k]; i >= 0; i = parent[i]) {
      const double a = at(i, k) * inv_d;
      for (int j = i; j >= 0; j = parent[j], ++updates) at(j, i) -= a * at(j, k);
      at(i, k) = a;
    }
    poll.add(2.0 * updates);
  }
}

namespace {

double factor_at(const Data& data, int row, int col) {
  const Eigen::MatrixXd& ltdl = data.workspace<MassFactorWorkspace>().ltdl;
  return ltdl.data()[row + static_cast<std::ptrdiff_t>(col) * ltdl.rows()];
}

}  // namespace

void ltdl_solve_transposed_factor(const Data& data, Eigen::Ref<Eigen::VectorXd> x) {
  const int nv = static_cast<int>(x.size());
  const int* parent = data.dof_parent.data();
  double* xp = x.data();
  for (int i = nv - 1; i >= 0; --i) {
    const double xi = xp[i];
    if (xi == 0.0) continue;
    for (int j = parent[i]; j >= 0; j = parent[j]) xp[j] -= factor_at(data, j, i) * xi;
  }
}

void ltdl_solve_factor(const Data& data, Eigen::Ref<Eigen::VectorXd> x) {
  const int nv = static_cast<int>(x.size());
  const int* parent = data.dof_parent.data();
  double* xp = x.data();
  for (int i = 0; i < nv; ++i) {
    double xi = xp[i];
    for (int j = parent[i]; j >= 0; j = parent[j]) xi -= factor_at(data, j, i) * xp[j];
    xp[i] = xi;
  }
}

void ltdl_solve(const Data& data, Eigen::Ref<Eigen::VectorXd> x) {
  ltdl_solve_transposed_factor(data, x);
  for (int i = 0; i < x.size(); ++i) x[i] /= factor_at(data, i, i);
  ltdl_solve_factor(data, x);
}

}  // namespace torqued
