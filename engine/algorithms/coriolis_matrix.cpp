// Coriolis matrix in the world frame (Featherstone 1987, ch. 2-3 for the spatial operators and
// §7.2 for trees; the composite structure of Pinocchio's computeCoriolisMatrix).
//
// With world-frame body inertias I_b, body Jacobians J_b (columns ⁰S_j of the joints supporting
// b) and body velocities v_b = J_b q̇, M = Σ_b J_bᵀ I_b J_b and the bias force of body b is
// I_b J̇_b q̇ + v_b ×* I_b v_b. The velocity-product term is factored as B(I, v) v with
//   B(I, v) = ½ (v×* I − I v× + (I v)⊼),      (h)⊼ u := u ×* h  (skew-symmetric in u),
// so that B + Bᵀ = v×* I − I v× = İ. Then C = Σ_b J_bᵀ (I_b J̇_b + B_b J_b) gives C v = the
// velocity terms of RNEA and C + Cᵀ = Σ_b (J̇_bᵀ I_b J_b + J_bᵀ İ_b J_b + J_bᵀ I_b J̇_b) = Ṁ.
// Each ⁰S_j is constant in its child frame, so its derivative is Ṡ_j = v_j × ⁰S_j.
//
// Summing over the bodies both joints support, with composites over subtrees
// I^c_i = Σ_{h ⊒ i} I_h and B^c_i = Σ_{h ⊒ i} B(I_h, v_h):
//   outward, i = 1..N:  ⁰X_i, v_i = v_λ(i) + ⁰S_i q̇_i, Ṡ_i = v_i × ⁰S_i, I_i, B(I_i, v_i)
//   inward,  i = N..1:  for each column k of joint i and each column r of i or an ancestor:
//                         C[r, k] = ⁰S_rᵀ (I^c_i Ṡ_k + B^c_i ⁰S_k)
//                       and for each column r of a strict ancestor:
//                         C[k, r] = (I^c_i ⁰S_k)ᵀ Ṡ_r + (B^c_iᵀ ⁰S_k)ᵀ ⁰S_r
//                       I^c_λ(i) += I^c_i,  B^c_λ(i) += B^c_i
// Entries of joints on different branches are zero.
#include "engine/algorithms/coriolis_matrix.hpp"

#include <cassert>

#include "engine/algorithms/world_frame.hpp"
#include "engine/model/joint_world.hpp"

namespace torqued {

namespace {

// v× acting on motions, [linear; angular] order: [[ [ω]×, [v]× ], [0, [ω]×]].
Mat6 motion_cross_matrix(const Motion& m) {
  Mat6 x = Mat6::Zero();
  const Mat3 w = skew(m.angular);
  x.topLeftCorner<3, 3>() = w;
  x.topRightCorner<3, 3>() = skew(m.linear);
  x.bottomRightCorner<3, 3>() = w;
  return x;
}

// B(I, v) = ½ (v×* I − I v× + (I v)⊼), with v×* = −(v×)ᵀ and, for h = (f, n),
// (h)⊼ = [[0, −[f]×], [−[f]×, −[n]×]].
Mat6 coriolis_factor(const RigidInertia& inertia, const Motion& v) {
  const Mat6 i = inertia.matrix();
  const Mat6 vx = motion_cross_matrix(v);
  const Force h = inertia * v;
  Mat6 b;
  b.noalias() = -vx.transpose() * i;
  b.noalias() -= i * vx;
  const Mat3 fx = skew(h.linear);
  b.topRightCorner<3, 3>() -= fx;
  b.bottomLeftCorner<3, 3>() -= fx;
  b.bottomRightCorner<3, 3>() -= skew(h.angular);
  return 0.5 * b;
}

}  // namespace

const Eigen::MatrixXd& coriolis_matrix(const Model& model, Data& data, const ConstVectorRef& q,
                                       const ConstVectorRef& v) {
  assert(fits(model, data, q, v));
  data.bind(model, kCoriolisWorkspaces);
  CoriolisWorkspace& w = data.workspace<CoriolisWorkspace>();
  const double* qp = q.data();
  const double* vp = v.data();
  const int n = model.nbodies();
  data.ov[0] = Motion::Zero();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    place_in_world(model, data, i, qp);
    data.ov[i] = data.ov[parent] + world_joint_motion(joint, data, vp);
    for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) {
      const Motion dS = data.ov[i].cross(Motion::FromVector(data.oS.col(k)));
      w.odS.col(k) << dS.linear, dS.angular;
    }
    w.composite[i] = model.inertias[i].transformed_by(data.oMi[i]);
    w.coupling[i] = coriolis_factor(w.composite[i], data.ov[i]);
  }

  Eigen::MatrixXd& c = w.C;
  c.setZero();
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const RigidInertia& inertia = w.composite[i];
    const Mat6& b = w.coupling[i];
    for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) {
      const Motion s = Motion::FromVector(data.oS.col(k));
      const Motion ds = Motion::FromVector(w.odS.col(k));
      // Column k against joint i's own columns and its ancestors' (rows r).
      const Vec6 column_force = (inertia * ds).to_vector() + b * data.oS.col(k);
      // Row k against the strict ancestors' columns r.
      const Vec6 momentum = (inertia * s).to_vector();
      const Vec6 b_transpose_s = b.transpose() * data.oS.col(k);
      for (int r = joint.idx_v; r < joint.idx_v + joint.nv; ++r) {
        c(r, k) = data.oS.col(r).dot(column_force);
      }
      for (int j = model.parent[i]; j > 0; j = model.parent[j]) {
        const Joint& ancestor = model.joints[j];
        for (int r = ancestor.idx_v; r < ancestor.idx_v + ancestor.nv; ++r) {
          c(r, k) = data.oS.col(r).dot(column_force);
          c(k, r) = momentum.dot(w.odS.col(r)) + b_transpose_s.dot(data.oS.col(r));
        }
      }
    }
    const int parent = model.parent[i];
    if (parent > 0) {
      w.composite[parent] += inertia;
      w.coupling[parent] += b;
    }
  }
  return c;
}

}  // namespace torqued
