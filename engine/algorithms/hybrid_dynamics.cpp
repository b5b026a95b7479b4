// Hybrid dynamics (Featherstone 1987, §7.5.2, eqs 7.35-7.38; Kim 2012, §2.3, eqs 51-53, Table 4):
// the articulated-body algorithm of aba.cpp, in world coordinates, where a DOF with a given
// acceleration is not eliminated: its known motion ⁰S_a q̈_a joins the velocity-product term and
// its joint transmits the articulated inertia unchanged, "effectively rigidly connecting" the two
// bodies. Per joint, S splits into the columns S_a (q̈ given) and S_f (τ given):
//   pass 1, i = 1..N: as ABA, with c_i = v_i × ⁰S_i q̇_i + ⁰S_a q̈_a (the known part of a_i − a_λ)
//   pass 2, i = N..1: U = I^A_i S_f,  D = S_fᵀ U,  u = τ_f − S_fᵀ p^A_i
//                     I^A_λ += I^A_i − U D⁻¹ Uᵀ                      (just I^A_i when S_f is empty)
//                     p^A_λ += p^A_i + I^A_i c_i + U D⁻¹ (u − Uᵀ c_i)
//   pass 3, i = 1..N: a' = a_λ + c_i,  q̈_f = D⁻¹ (u − Uᵀ a'),  a_i = a' + S_f q̈_f,
//                     τ_a = S_aᵀ (I^A_i a_i + p^A_i)                  (7.38)
// The force across joint i is I^A_i a_i + p^A_i because I^A_i and p^A_i describe the whole
// subtree i with its force-given joints articulated and its acceleration-given joints driven.
#include "engine/algorithms/hybrid_dynamics.hpp"

#include <Eigen/Cholesky>
#include <stdexcept>

#include "engine/algorithms/articulated_body.hpp"
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

// The force-given columns of a joint: their count, and their offsets within the joint.
struct ForceColumns {
  int count = 0;
  int offset[6];
};

ForceColumns force_columns(const Joint& joint, const DofInput* input) {
  ForceColumns f;
  for (int k = 0; k < joint.nv; ++k) {
    if (input[joint.idx_v + k] == DofInput::kForce) f.offset[f.count++] = k;
  }
  return f;
}

}  // namespace

void hybrid_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                     const ConstVectorRef& v, const ConstVectorRef& ddq, const ConstVectorRef& tau,
                     std::span<const DofInput> input, std::span<const Force> external_forces) {
  if (static_cast<int>(input.size()) != model.nv) {
    throw std::invalid_argument("hybrid_dynamics: the input mask has " +
                                std::to_string(input.size()) + " entries for " +
                                std::to_string(model.nv) + " degrees of freedom");
  }
  const double* qp = q.data();
  const double* vp = v.data();
  const double* ddq_in = ddq.data();
  const double* tau_in = tau.data();
  const DofInput* in = input.data();
  const int n = model.nbodies();
  double* os = data.oS.data();
  double* ddq_out = data.ddq.data();
  double* tau_out = data.tau.data();

  data.ov[0] = Motion::Zero();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Transform& oMi = place_in_world(model, data, i, qp);
    const double* s = os + 6 * joint.idx_v;
    const Motion vj = world_joint_motion(joint, data, vp);
    const Motion& vel = data.ov[i] = data.ov[parent] + vj;
    Motion& c = data.c[i];
    c = vel.cross(vj);
    for (int k = 0; k < joint.nv; ++k) {
      const int dof = joint.idx_v + k;
      if (in[dof] == DofInput::kAcceleration) c += motion_at(s + 6 * k) * ddq_in[dof];
    }
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
    const Vec6 c = data.c[i].to_vector();
    const ForceColumns f = force_columns(joint, in);
    if (f.count == 0) {
      if (parent > 0) {
        data.Ia[parent] += ia;
        data.pa[parent] += Force::FromVector(pa + ia * c);
      }
    } else if (joint.nv == 1) {
      // The ABA step of aba.cpp.
      auto u_col = data.U.col(joint.idx_v);
      const auto s = data.oS.col(joint.idx_v);
      u_col.noalias() = ia * s;
      const double d = s.dot(u_col);
      if (is_degenerate(d, ia)) throw_singular(model, i);
      const double inv_d = 1.0 / d;
      const double u = tau_in[joint.idx_v] - s.dot(pa);
      data.Dinv[i](0, 0) = inv_d;
      data.u[joint.idx_v] = u;
      if (parent > 0) {
        const Vec6 ic = ia * c;
        const Vec6 uc = u_col;
        const double gain = inv_d * (u - uc.dot(c));
        data.Ia[parent] += ia;
        data.Ia[parent].noalias() -= (inv_d * uc) * uc.transpose();
        data.pa[parent] += Force::FromVector(pa + ic + uc * gain);
      }
    } else {
      const int k = f.count;
      SubspaceMatrix s_f(6, k);
      for (int r = 0; r < k; ++r) s_f.col(r) = data.oS.col(joint.idx_v + f.offset[r]);
      SubspaceMatrix u_f(6, k);
      u_f.noalias() = ia * s_f;
      const SmallMatrix d_inv = invert_pivot(model, i, s_f, u_f, ia);
      data.Dinv[i].topLeftCorner(k, k) = d_inv;
      SmallVector u(k);
      for (int r = 0; r < k; ++r) u[r] = tau_in[joint.idx_v + f.offset[r]];
      u.noalias() -= s_f.transpose() * pa;
      // U and u are kept at the force-given DOFs' own indices for pass 3.
      for (int r = 0; r < k; ++r) {
        data.U.col(joint.idx_v + f.offset[r]) = u_f.col(r);
        data.u[joint.idx_v + f.offset[r]] = u[r];
      }
      if (parent > 0) {
        SmallVector rhs = u;
        rhs.noalias() -= u_f.transpose() * c;
        SmallVector gain(k);
        gain.noalias() = d_inv * rhs;
        add_reduced_inertia(ia, u_f, d_inv, data.Ia[parent]);
        Vec6 pa_parent = pa;
        pa_parent.noalias() += ia * c;
        pa_parent.noalias() += u_f * gain;
        data.pa[parent] += Force::FromVector(pa_parent);
      }
    }
  }

  data.oa_gf[0] = {-model.gravity, Vec3::Zero()};
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    Motion& acc = data.oa_gf[i];
    acc = data.oa_gf[model.parent[i]] + data.c[i];
    const double* s = os + 6 * joint.idx_v;
    const ForceColumns f = force_columns(joint, in);
    if (f.count > 0) {
      const Vec6 acc_vec = acc.to_vector();
      if (joint.nv == 1) {
        const int dof = joint.idx_v;
        const double qdd = data.Dinv[i](0, 0) * (data.u[dof] - data.U.col(dof).dot(acc_vec));
        ddq_out[dof] = qdd;
        tau_out[dof] = tau_in[dof];
        acc += motion_at(s) * qdd;
      } else {
        const int k = f.count;
        SmallVector rhs(k);
        for (int r = 0; r < k; ++r) {
          const int dof = joint.idx_v + f.offset[r];
          rhs[r] = data.u[dof] - data.U.col(dof).dot(acc_vec);
        }
        SmallVector qdd(k);
        qdd.noalias() = data.Dinv[i].topLeftCorner(k, k) * rhs;
        for (int r = 0; r < k; ++r) {
          const int dof = joint.idx_v + f.offset[r];
          ddq_out[dof] = qdd[r];
          tau_out[dof] = tau_in[dof];
          acc += motion_at(s + 6 * f.offset[r]) * qdd[r];
        }
      }
    }
    if (f.count < joint.nv) {
      // τ_a = S_aᵀ (I^A_i a_i + p^A_i), the force the driven DOFs transmit (7.38).
      const Force force = data.Ia[i] * acc + data.pa[i];
      for (int k = 0; k < joint.nv; ++k) {
        const int dof = joint.idx_v + k;
        if (in[dof] != DofInput::kAcceleration) continue;
        ddq_out[dof] = ddq_in[dof];
        tau_out[dof] = motion_at(s + 6 * k).dot(force);
      }
    }
  }
}

}  // namespace torqued
