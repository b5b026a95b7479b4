// Articulated-body forward dynamics (Featherstone 1987, ch. 6, eqs 6.37-6.47, with §7.2-7.4 for
// trees and multi-DOF joints; Kim 2012, §2.2, Table 3), in world coordinates. Expressing every
// articulated inertia in the world frame turns the costly congruence ᵖX* I^a ⁱX_p of each body
// into a plain addition; what it costs instead is one rigid-inertia rotation per body (10
// parameters, not 21). Gravity enters as a fictitious base acceleration −g.
//   pass 1, i = 1..N: ⁰S_i = ⁰X_i S_i,  v_i = v_λ + ⁰S_i q̇_i,  c_i = v_i × ⁰S_i q̇_i,
//                     I^A_i = ⁰I_i,  p^A_i = v_i ×* ⁰I_i v_i − f_ext,i
//   pass 2, i = N..1: U_i = I^A_i ⁰S_i,  D_i = ⁰S_iᵀ U_i,  u_i = τ_i − ⁰S_iᵀ p^A_i
//                     I^A_λ += I^A_i − U_i D_i⁻¹ U_iᵀ
//                     p^A_λ += p^A_i + I^A_i c_i + U_i D_i⁻¹ (u_i − U_iᵀ c_i)
//   pass 3, i = 1..N: a' = a_λ + c_i,  q̈_i = D_i⁻¹ (u_i − U_iᵀ a'),  a_i = a' + ⁰S_i q̈_i
#include "engine/algorithms/aba.hpp"

#include <Eigen/Cholesky>

#include "engine/algorithms/articulated_body.hpp"
#include "engine/algorithms/world_frame.hpp"

namespace torqued {

using articulated::add_reduced_inertia;
using articulated::invert_pivot;
using articulated::is_degenerate;
using articulated::motion_at;
using articulated::SmallMatrix;
using articulated::SmallVector;
using articulated::SubspaceMatrix;
using articulated::throw_singular;

const Eigen::VectorXd& aba(const Model& model, Data& data, const ConstVectorRef& q,
                           const ConstVectorRef& v, const ConstVectorRef& tau,
                           std::span<const Force> external_forces) {
  const double* qp = q.data();
  const double* vp = v.data();
  const double* taup = tau.data();
  const int n = model.nbodies();
  double* os = data.oS.data();

  data.ov[0] = Motion::Zero();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Transform& oMi = place_in_world(model, data, i, qp);
    const Motion vj = world_joint_motion(joint, data, vp);
    const Motion& vel = data.ov[i] = data.ov[parent] + vj;
    data.c[i] = vel.cross(vj);
    const RigidInertia inertia = model.inertias[i].transformed_by(oMi);
    data.Ia[i] = inertia.matrix();
    data.pa[i] = vel.cross(inertia * vel);
    if (!external_forces.empty()) data.pa[i] -= oMi.act(external_forces[i]);
  }

  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Mat6& ia = data.Ia[i];
    const Vec6 pa = data.pa[i].to_vector();
    const int k = joint.nv;
    const auto s = data.oS.middleCols(joint.idx_v, k);
    auto u_cols = data.U.middleCols(joint.idx_v, k);
    u_cols.noalias() = ia * s;
    if (k == 1) {
      const double d = s.col(0).dot(u_cols.col(0));
      if (is_degenerate(d, ia)) throw_singular(model, i);
      const double inv_d = 1.0 / d;
      const double u = taup[joint.idx_v] - s.col(0).dot(pa);
      data.Dinv[i](0, 0) = inv_d;
      data.u[joint.idx_v] = u;
      if (parent > 0) {
        const Vec6 ic = ia * data.c[i].to_vector();
        const Vec6 uc = u_cols.col(0);
        const double gain = inv_d * (u - uc.dot(data.c[i].to_vector()));
        data.Ia[parent] += ia;
        data.Ia[parent].noalias() -= (inv_d * uc) * uc.transpose();
        data.pa[parent] += Force::FromVector(pa + ic + uc * gain);
      }
    } else {
      // Multi-DOF joints go through temporaries of at most 6 x 6 so that nothing reaches the heap.
      const SubspaceMatrix s_block = s;
      const SubspaceMatrix u_block = u_cols;
      const SmallMatrix d_inv = invert_pivot(model, i, s_block, u_block, ia);
      data.Dinv[i].topLeftCorner(k, k) = d_inv;
      SmallVector u = tau.segment(joint.idx_v, k);
      u.noalias() -= s_block.transpose() * pa;
      data.u.segment(joint.idx_v, k) = u;
      if (parent > 0) {
        const Vec6 c = data.c[i].to_vector();
        SmallVector rhs = u;
        rhs.noalias() -= u_block.transpose() * c;
        SmallVector gain(k);
        gain.noalias() = d_inv * rhs;
        add_reduced_inertia(ia, u_block, d_inv, data.Ia[parent]);
        Vec6 pa_parent = pa;
        pa_parent.noalias() += ia * c;
        pa_parent.noalias() += u_block * gain;
        data.pa[parent] += Force::FromVector(pa_parent);
      }
    }
  }

  data.oa_gf[0] = {-model.gravity, Vec3::Zero()};
  double* ddq = data.ddq.data();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    Motion& acc = data.oa_gf[i];
    acc = data.oa_gf[model.parent[i]] + data.c[i];
    const Vec6 acc_vec = acc.to_vector();
    const int k = joint.nv;
    const double* s = os + 6 * joint.idx_v;
    if (k == 1) {
      const double qdd =
          data.Dinv[i](0, 0) * (data.u[joint.idx_v] - data.U.col(joint.idx_v).dot(acc_vec));
      ddq[joint.idx_v] = qdd;
      acc += motion_at(s) * qdd;
    } else {
      SmallVector rhs = data.u.segment(joint.idx_v, k);
      rhs.noalias() -= data.U.middleCols(joint.idx_v, k).transpose() * acc_vec;
      data.ddq.segment(joint.idx_v, k).noalias() = data.Dinv[i].topLeftCorner(k, k) * rhs;
      for (int r = 0; r < k; ++r) acc += motion_at(s + 6 * r) * ddq[joint.idx_v + r];
    }
  }
  return data.ddq;
}

}  // namespace torqued
