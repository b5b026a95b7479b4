// Forward dynamics by the innovations factorization (Rodriguez & Kreutz 1988, Part I §4 Fact
// 4.1 and Theorem 4.1, algorithm FD1 of eqs 4.17-4.22; digest-001-004 §1.4-1.5):
//   T' = τ − C q̇ − g                                  (sweeps 1-2: RNEA with q̈ = 0)
//   q̈  = (I − HΨL)ᵀ D⁻¹ (I − HΨL) T'
// In world coordinates every φ(k+1, k) is the identity, P(k) is the articulated inertia I^A,
// the Kalman gain is L = U D⁻¹ with U = I^A ⁰S, and ψ = I − L ⁰Sᵀ. For a tree the tip-to-base
// order becomes children before parents:
//   Riccati, i = N..1:  U_i = I^A_i ⁰S_i,  D_i = ⁰S_iᵀ U_i,  I^A_λ += I^A_i − U_i D_i⁻¹ U_iᵀ
//   filter,  i = N..1:  ε_i = T'_i − ⁰S_iᵀ z_i,  ν_i = D_i⁻¹ ε_i,  z_λ += z_i + U_i ν_i
//   smoother, i = 1..N: q̈_i = ν_i − D_i⁻¹ U_iᵀ λ_λ,  λ_i = λ_λ + ⁰S_i q̈_i
// z is the innovations state (an articulated force) and λ the smoother's co-state (a body
// acceleration). The factorization needs q only and serves any number of right-hand sides, each
// in O(n); velocities and gravity enter only through T'.
#include "engine/algorithms/forward_dynamics_factorization.hpp"

#include <Eigen/Cholesky>

#include "engine/algorithms/articulated_body.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/world_frame.hpp"
#include "engine/model/joint_world.hpp"

namespace torqued {

namespace {

using articulated::add_reduced_inertia;
using articulated::invert_pivot;
using articulated::is_degenerate;
using articulated::motion_at;
using articulated::SmallMatrix;
using articulated::SmallVector;
using articulated::SubspaceMatrix;
using articulated::throw_singular;

}  // namespace

void factorize_mass_matrix(const Model& model, Data& data, const ConstVectorRef& q) {
  const double* qp = q.data();
  const int n = model.nbodies();
  for (int i = 1; i < n; ++i) {
    data.Ia[i] = model.inertias[i].transformed_by(place_in_world(model, data, i, qp)).matrix();
  }
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Mat6& ia = data.Ia[i];
    const int k = joint.nv;
    const auto s = data.oS.middleCols(joint.idx_v, k);
    auto u_cols = data.U.middleCols(joint.idx_v, k);
    u_cols.noalias() = ia * s;
    if (k == 1) {
      const double d = s.col(0).dot(u_cols.col(0));
      if (is_degenerate(d, ia)) throw_singular(model, i);
      const double inv_d = 1.0 / d;
      data.Dinv[i](0, 0) = inv_d;
      if (parent > 0) {
        const Vec6 uc = u_cols.col(0);
        data.Ia[parent] += ia;
        data.Ia[parent].noalias() -= (inv_d * uc) * uc.transpose();
      }
    } else {
      const SubspaceMatrix s_block = s;
      const SubspaceMatrix u_block = u_cols;
      const SmallMatrix d_inv = invert_pivot(model, i, s_block, u_block, ia);
      data.Dinv[i].topLeftCorner(k, k) = d_inv;
      if (parent > 0) {
        add_reduced_inertia(ia, u_block, d_inv, data.Ia[parent]);
      }
    }
  }
}

const Eigen::VectorXd& solve_factorized(const Model& model, Data& data, const ConstVectorRef& rhs) {
  const int n = model.nbodies();
  const double* os = data.oS.data();
  const double* ucols = data.U.data();
  double* nu = data.ddq.data();
  for (int i = 1; i < n; ++i) data.pa[i] = Force::Zero();

  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Force& z = data.pa[i];
    const int k = joint.nv;
    if (k == 1) {
      const int dof = joint.idx_v;
      nu[dof] = data.Dinv[i](0, 0) * (rhs[dof] - motion_at(os + 6 * dof).dot(z));
      if (parent > 0) {
        const Force gain = Force::FromVector(Eigen::Map<const Vec6>(ucols + 6 * dof) * nu[dof]);
        data.pa[parent] += z + gain;
      }
    } else {
      SmallVector eps(k);
      for (int r = 0; r < k; ++r) {
        eps[r] = rhs[joint.idx_v + r] - motion_at(os + 6 * (joint.idx_v + r)).dot(z);
      }
      data.ddq.segment(joint.idx_v, k).noalias() = data.Dinv[i].topLeftCorner(k, k) * eps;
      if (parent > 0) {
        Vec6 z_parent = z.to_vector();
        z_parent.noalias() += data.U.middleCols(joint.idx_v, k) * data.ddq.segment(joint.idx_v, k);
        data.pa[parent] += Force::FromVector(z_parent);
      }
    }
  }

  data.oa_gf[0] = Motion::Zero();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    Motion& lambda = data.oa_gf[i];
    lambda = data.oa_gf[model.parent[i]];
    const Vec6 lambda_parent = lambda.to_vector();
    const int k = joint.nv;
    const double* s = os + 6 * joint.idx_v;
    if (k == 1) {
      const int dof = joint.idx_v;
      nu[dof] -= data.Dinv[i](0, 0) * data.U.col(dof).dot(lambda_parent);
      lambda += motion_at(s) * nu[dof];
    } else {
      SmallVector correction(k);
      correction.noalias() = data.U.middleCols(joint.idx_v, k).transpose() * lambda_parent;
      data.ddq.segment(joint.idx_v, k).noalias() -= data.Dinv[i].topLeftCorner(k, k) * correction;
      for (int r = 0; r < k; ++r) lambda += motion_at(s + 6 * r) * nu[joint.idx_v + r];
    }
  }
  return data.ddq;
}

const Eigen::VectorXd& forward_dynamics_factorization(const Model& model, Data& data,
                                                      const ConstVectorRef& q,
                                                      const ConstVectorRef& v,
                                                      const ConstVectorRef& tau) {
  data.u = tau - nonlinear_effects(model, data, q, v);
  factorize_mass_matrix(model, data, q);
  return solve_factorized(model, data, data.u);
}

}  // namespace torqued
