// Analytic derivatives of the recursive Newton-Euler algorithm in the world frame (Carpentier &
// Mansard 2018, §III-IV; Pinocchio's computeRNEADerivatives follows the same recursions). All
// quantities are in world coordinates, so a change of q_k rigidly moves the subtree of k with the
// world twist s = ⁰S_k, and everything attached to a body is transported by s× (motions) or s×*
// (forces); what is not transported are the parts of v_i and a_i contributed above joint k.
// Writing λ for the parent of k's body, v, a for the world velocity and acceleration (with −g),
// for a body i below k:
//   ∂v_i/∂q_k = s × v_i + ψ_k,        ψ_k = v_λ × s
//   ∂a_i/∂q_k = s × a_i + φ_k + ψ_k × v_i,   φ_k = a_λ × s + v_λ × ψ_k
//   ∂v_i/∂q̇_k = s,   ∂a_i/∂q̇_k = s × v_i + χ_k,   χ_k = ψ_k + v_k × s
// The body force f_i = I_i a_i + v_i ×* I_i v_i then varies by I_i φ + B_i ψ (resp. I_i χ + B_i s)
// beyond transport, with the inertia-velocity coupling
//   B_i x = I_i (x × v_i) + x ×* I_i v_i + v_i ×* I_i x
// which, written in 3x3 blocks for a rigid inertia (mass m, first moment h, rotational I_O) and
// v = (v_l, ω), only reads the angular part of x:
//   B x = (−2 p × x_ω,  B_ω x_ω),   p = m v_l − h × ω (the linear momentum),
//   B_ω = [ω]× I_O − I_O [ω]× + 2 (v_l·h) 1 − v_l hᵀ − h v_lᵀ − [I_O ω + h × v_l]×.
// Summing over subtrees (composites Y_j = Σ I_i, B_j = Σ B_i, F_j = Σ f_i) and using
// ⟨s × S, F⟩ + ⟨S, s ×* F⟩ = 0 gives, for DOFs k of joint K and j of joint J:
//   K ancestor of J or K = J:  ∂τ_j/∂q_k = S_jᵀ (Y_J φ_k + B_J ψ_k),   ∂τ_j/∂q̇_k = S_jᵀ (Y_J χ_k +
//   B_J S_k) J strict ancestor of K:    ∂τ_j/∂q_k = S_jᵀ (S_k ×* F_K + Y_K φ_k + B_K ψ_k),
//                              ∂τ_j/∂q̇_k = S_jᵀ (Y_K χ_k + B_K S_k)
// and ∂τ_j/∂q̈_k = S_jᵀ Y_max(J,K) S_k = M_jk. Entries of unrelated DOFs are zero and never
// written. Cost: O(n) for the passes plus five 6-vector dot products per (DOF, ancestor DOF) pair.
#include "engine/algorithms/rnea_derivatives.hpp"

#include <cassert>

#include "engine/algorithms/world_frame.hpp"
#include "engine/model/joint_world.hpp"

namespace torqued {

namespace {

Motion motion_at(const double* x) { return {Vec3(x[0], x[1], x[2]), Vec3(x[3], x[4], x[5])}; }

void store(const Motion& m, double* x) {
  x[0] = m.linear.x();
  x[1] = m.linear.y();
  x[2] = m.linear.z();
  x[3] = m.angular.x();
  x[4] = m.angular.y();
  x[5] = m.angular.z();
}

double dot(const Force& f, const double* m) {
  return f.linear.x() * m[0] + f.linear.y() * m[1] + f.linear.z() * m[2] + f.angular.x() * m[3] +
         f.angular.y() * m[4] + f.angular.z() * m[5];
}

// The angular block B_ω of the coupling matrix of a rigid inertia moving with velocity v.
Mat3 coupling_block(const RigidInertia& inertia, const Motion& v, const Vec3& angular_momentum) {
  const Vec3& vl = v.linear;
  const Vec3& w = v.angular;
  const Vec3& h = inertia.first_moment;
  // T = [ω]× I_O, and I_O [ω]× = −Tᵀ because I_O is symmetric.
  Mat3 t;
  for (int c = 0; c < 3; ++c) t.col(c) = w.cross(inertia.rotational.col(c));
  const double vh = 2.0 * vl.dot(h);
  Mat3 b;
  for (int r = 0; r < 3; ++r) {
    for (int c = r; c < 3; ++c) {
      const double value = t(r, c) + t(c, r) - vl[r] * h[c] - h[r] * vl[c];
      b(r, c) = value;
      b(c, r) = value;
    }
    b(r, r) += vh;
  }
  const Vec3& l = angular_momentum;
  b(0, 1) += l.z();
  b(1, 0) -= l.z();
  b(0, 2) -= l.y();
  b(2, 0) += l.y();
  b(1, 2) += l.x();
  b(2, 1) -= l.x();
  return b;
}

// The forward pass: world placements (data.oMi, data.oS), velocities and accelerations (data.ov,
// data.oa_gf) and the per-DOF rates ψ, φ, χ; with kForces, the bodies' forces, inertias, momenta
// and couplings that the backward pass sums.
template <bool kForces>
RneaDerivativesWorkspace& forward_pass(const Model& model, Data& data, const ConstVectorRef& q,
                                       const ConstVectorRef& v, const ConstVectorRef& a,
                                       std::span<const Force> external_forces,
                                       const Vec3& gravity) {
  assert(fits(model, data, q, v, a));
  data.bind(model, kRneaDerivativesWorkspaces);
  RneaDerivativesWorkspace& w = data.workspace<RneaDerivativesWorkspace>();
  const double* qp = q.data();
  const double* vp = v.data();
  const double* ap = a.data();
  const int n = model.nbodies();
  double* os = data.oS.data();
  double* psi = w.dv_dq.data();
  double* phi = w.da_dq.data();
  double* chi = w.da_dv.data();

  data.ov[0] = Motion::Zero();
  data.oa_gf[0] = {-gravity, Vec3::Zero()};
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Transform& oMi = place_in_world(model, data, i, qp);
    const double* s = os + 6 * joint.idx_v;
    const Motion& v_parent = data.ov[parent];
    const Motion& a_parent = data.oa_gf[parent];
    Motion vj = Motion::Zero();
    Motion aj = Motion::Zero();
    for (int k = 0; k < joint.nv; ++k) {
      const Motion sk = motion_at(s + 6 * k);
      vj += sk * vp[joint.idx_v + k];
      aj += sk * ap[joint.idx_v + k];
    }
    const Motion& vel = data.ov[i] = v_parent + vj;
    const Motion& acc = data.oa_gf[i] = a_parent + v_parent.cross(vj) + aj;
    for (int k = 0; k < joint.nv; ++k) {
      const int col = 6 * (joint.idx_v + k);
      const Motion sk = motion_at(s + 6 * k);
      const Motion psi_k = v_parent.cross(sk);
      store(psi_k, psi + col);
      store(a_parent.cross(sk) + v_parent.cross(psi_k), phi + col);
      store(psi_k + vel.cross(sk), chi + col);
    }
    if constexpr (kForces) {
      const RigidInertia inertia = model.inertias[i].transformed_by(oMi);
      const Force momentum = inertia * vel;
      w.force[i] = inertia * acc + vel.cross(momentum);
      if (!external_forces.empty()) w.force[i] -= oMi.act(external_forces[i]);
      w.composite[i] = inertia;
      w.momentum[i] = momentum.linear;
      w.coupling[i] = coupling_block(inertia, vel, momentum.angular);
    }
  }
  return w;
}

// The backward pass after forward_pass<true>(): ∂τ/∂q, and with kAll ∂τ/∂q̇, M and τ too.
template <bool kAll>
const RneaDerivativesWorkspace& backward_pass(const Model& model, Data& data,
                                              RneaDerivativesWorkspace& w) {
  const int n = model.nbodies();
  const int nv = model.nv;
  const double* os = data.oS.data();
  const double* psi = w.dv_dq.data();
  const double* phi = w.da_dq.data();
  const double* chi = w.da_dv.data();

  double* dq = w.dtau_dq.data();
  double* dv = w.dtau_dv.data();
  double* m = data.workspace<MassMatrixWorkspace>().M.data();
  double* tau = data.tau.data();
  InterruptionPoll poll(data.interruption);
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const RigidInertia& y = w.composite[i];
    const Vec3& p = w.momentum[i];
    const Mat3& b = w.coupling[i];
    const Force& f = w.force[i];
    int pairs = 0;  // of this joint's DOFs and those of the joint and its ancestors
    for (int k = 0; k < joint.nv; ++k) {
      const int col = joint.idx_v + k;
      const double* s_col = os + 6 * col;
      const Motion s = motion_at(s_col);
      const Motion psi_k = motion_at(psi + 6 * col);
      // Y S, and Bᵀ S (whose linear part is zero).
      const Force ys = y * s;
      const Vec3 bts = 2.0 * p.cross(s.linear) + b.transpose() * s.angular;
      if constexpr (kAll) tau[col] = s.dot(f);
      // Row col against the DOFs of this joint and of its ancestors.
      for (int anc = i; anc > 0; anc = model.parent[anc]) {
        const Joint& aj = model.joints[anc];
        for (int r = 0; r < aj.nv; ++r) {
          const int other = aj.idx_v + r;
          const double* s_o = os + 6 * other;
          const double* psi_o = psi + 6 * other;
          const double* phi_o = phi + 6 * other;
          const std::ptrdiff_t at = col + static_cast<std::ptrdiff_t>(other) * nv;
          dq[at] = dot(ys, phi_o) + bts.dot(Vec3(psi_o[3], psi_o[4], psi_o[5]));
          if constexpr (kAll) {
            const double* chi_o = chi + 6 * other;
            dv[at] = dot(ys, chi_o) + bts.dot(Vec3(s_o[3], s_o[4], s_o[5]));
            const double mass = dot(ys, s_o);
            m[at] = mass;
            m[other + static_cast<std::ptrdiff_t>(col) * nv] = mass;
          }
        }
        pairs += aj.nv;
      }
      if (model.parent[i] == 0) continue;
      // Column col against the DOFs of the strict ancestors.
      const Motion phi_k = motion_at(phi + 6 * col);
      const Force hq =
          s.cross(f) + y * phi_k + Force{-2.0 * p.cross(psi_k.angular), b * psi_k.angular};
      double* dq_col = dq + static_cast<std::ptrdiff_t>(col) * nv;
      if constexpr (kAll) {
        const Motion chi_k = motion_at(chi + 6 * col);
        const Force hv = y * chi_k + Force{-2.0 * p.cross(s.angular), b * s.angular};
        double* dv_col = dv + static_cast<std::ptrdiff_t>(col) * nv;
        for (int anc = model.parent[i]; anc > 0; anc = model.parent[anc]) {
          const Joint& aj = model.joints[anc];
          for (int r = 0; r < aj.nv; ++r) {
            const int other = aj.idx_v + r;
            dq_col[other] = dot(hq, os + 6 * other);
            dv_col[other] = dot(hv, os + 6 * other);
          }
        }
      } else {
        for (int anc = model.parent[i]; anc > 0; anc = model.parent[anc]) {
          const Joint& aj = model.joints[anc];
          for (int r = 0; r < aj.nv; ++r) dq_col[aj.idx_v + r] = dot(hq, os + 6 * (aj.idx_v + r));
        }
      }
    }
    poll.add((kAll ? 60.0 : 24.0) * pairs);  // about five (two) 6-vector products per pair
    const int parent = model.parent[i];
    if (parent > 0) {
      w.composite[parent] += y;
      w.momentum[parent] += p;
      w.coupling[parent] += b;
      w.force[parent] += f;
    }
  }
  return w;
}

}  // namespace

const RneaDerivativesWorkspace& rnea_derivatives(const Model& model, Data& data,
                                                 const ConstVectorRef& q, const ConstVectorRef& v,
                                                 const ConstVectorRef& a,
                                                 std::span<const Force> external_forces) {
  return rnea_derivatives(model, data, q, v, a, external_forces, model.gravity);
}

const RneaDerivativesWorkspace& forward_kinematics_derivatives(const Model& model, Data& data,
                                                               const ConstVectorRef& q,
                                                               const ConstVectorRef& v,
                                                               const ConstVectorRef& a,
                                                               const Vec3& gravity) {
  return forward_pass<false>(model, data, q, v, a, {}, gravity);
}

const RneaDerivativesWorkspace& rnea_derivatives(const Model& model, Data& data,
                                                 const ConstVectorRef& q, const ConstVectorRef& v,
                                                 const ConstVectorRef& a,
                                                 std::span<const Force> external_forces,
                                                 const Vec3& gravity) {
  return backward_pass<true>(model, data,
                             forward_pass<true>(model, data, q, v, a, external_forces, gravity));
}

const RneaDerivativesWorkspace& rnea_configuration_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& a, std::span<const Force> external_forces, const Vec3& gravity) {
  return backward_pass<false>(model, data,
                              forward_pass<true>(model, data, q, v, a, external_forces, gravity));
}

}  // namespace torqued
