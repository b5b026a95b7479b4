// Helpers shared by the articulated-body variants (hybrid dynamics, M⁻¹, the innovations
// factorization): the pivot test and error of aba.cpp, and reading a world-frame subspace column.
#pragma once

#include <Eigen/Cholesky>
#include <cmath>
#include <string>

#include "engine/algorithms/aba.hpp"

namespace torqued::articulated {

[[noreturn]] inline void throw_singular(const Model& model, int body) {
  throw SingularSystemError("forward dynamics is singular at joint '" + model.joint_names[body] +
                            "': it moves no inertia (a massless subtree or a mass on its axis)");
}

// D = Sᵀ I^A S is the inertia the joint drives; it vanishes when nothing with mass moves with it.
// The threshold is relative to the size of the articulated inertia so that it holds in any units
// (the same test as aba.cpp).
inline bool is_degenerate(double pivot, const Mat6& articulated) {
  return !(pivot > 1e-12 * articulated.trace()) || !std::isfinite(pivot);
}

// The 6 doubles of a [linear; angular] column as a Motion.
inline Motion motion_at(const double* x) {
  return {Vec3(x[0], x[1], x[2]), Vec3(x[3], x[4], x[5])};
}

// Column views and small dense blocks of at most 6 x 6, so that multi-DOF joints never reach the
// heap.
using SubspaceMatrix = Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6>;
using SmallMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 6, 6>;
using SmallVector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, 6, 1>;

// D⁻¹ for a joint's pivot D = ⁰Sᵀ U (k x k, k ≤ 6, U = I^A ⁰S), or SingularSystemError naming
// the joint when D is not positive definite.
inline SmallMatrix invert_pivot(const Model& model, int body, const SubspaceMatrix& s,
                                const SubspaceMatrix& u, const Mat6& articulated) {
  const int k = static_cast<int>(s.cols());
  SmallMatrix d(k, k);
  d.noalias() = s.transpose() * u;
  const Eigen::LLT<SmallMatrix> llt(d);
  if (llt.info() != Eigen::Success) throw_singular(model, body);
  const double smallest = llt.matrixLLT().diagonal().minCoeff();
  if (is_degenerate(smallest * smallest, articulated)) throw_singular(model, body);
  SmallMatrix d_inv = SmallMatrix::Identity(k, k);
  llt.solveInPlace(d_inv);
  return d_inv;
}

// I^A_λ += I^A − U D⁻¹ Uᵀ: what the parent sees of a body through its joint.
inline void add_reduced_inertia(const Mat6& articulated, const SubspaceMatrix& u,
                                const SmallMatrix& d_inv, Mat6& parent) {
  SubspaceMatrix u_dinv(6, u.cols());
  u_dinv.noalias() = u * d_inv;
  parent += articulated;
  parent.noalias() -= u_dinv * u.transpose();
}

}  // namespace torqued::articulated
