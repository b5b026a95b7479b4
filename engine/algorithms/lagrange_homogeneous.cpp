// Lagrangian dynamics in 4x4 homogeneous matrices (Legnani et al. part 2, §2.1 and §3; Silver
// AIM-622 §1.4 and eq. 2.11). λ = parent; k runs over the DOFs of joint i; all matrices in the
// world frame.
//   outward, i = 1..N:
//     M_{0,i} = M_{0,λ} M_{λ,i}(q_i)                                          (§2.1)
//     L_k     = M_{0,i} L̂_k M_{0,i}⁻¹        L̂_k = [[ [ω_k]×, v_k ], [0, 0]] for S_k = (v_k, ω_k)
//     X_i     = Σ_k L_k q̇_k                  (W_{λ,i(0)}, the joint's relative velocity)
//     W_{0,i} = W_{0,λ} + X_i                                                  (eq. 2)
//     H_{0,i} = H_{0,λ} + Σ_k L_k q̈_k + X_i² + 2 W_{0,λ} X_i                 (eq. 3, Coriolis)
//     J_{i(0)} = M_{0,i} J_i M_{0,i}ᵀ
//   inward, i = N..1:
//     P_i = (H_{0,i} − H_g) J_{i(0)} + Σ_{children c} P_c
//     τ_k = tr(P_i L_kᵀ)                                                       (§3, eqs 8-10)
//   mass matrix, i = N..1:  J^c_i = J_{i(0)} + Σ_c J^c_c,
//     M[r, k] = tr(L_r J^c_i L_kᵀ) for r a DOF of i or of an ancestor of i.
// S_k is the joint's constant child-frame subspace column, so L_k is taken with M_{0,i}; for the
// 1-DOF joints that is Legnani's M_{0,λ}-based L, since the joint's own motion leaves its screw
// unchanged. Legnani's H̃ (the q̈-free part of H) and the q̈ terms are kept together in H, which is
// his "Trace[(H̃_{0,h} + Σ L q̈) J Lᵀ]".
#include "engine/algorithms/lagrange_homogeneous.hpp"

#include <cassert>

namespace torqued {

namespace {

using Mat4 = Eigen::Matrix4d;

Mat4 position_matrix(const Transform& x) {
  Mat4 m = Mat4::Identity();
  m.topLeftCorner<3, 3>() = x.rotation;
  m.topRightCorner<3, 1>() = x.translation;
  return m;
}

// M⁻¹ = [[Rᵀ, −Rᵀ p], [0, 1]]: a position matrix is inverted through its structure.
Mat4 inverse_position_matrix(const Mat4& m) {
  Mat4 inv = Mat4::Identity();
  inv.topLeftCorner<3, 3>() = m.topLeftCorner<3, 3>().transpose();
  inv.topRightCorner<3, 1>() = -(inv.topLeftCorner<3, 3>() * m.topRightCorner<3, 1>());
  return inv;
}

// Legnani's L (a velocity matrix per unit joint rate) of the twist s.
Mat4 joint_matrix(const Motion& s) {
  Mat4 l = Mat4::Zero();
  l.topLeftCorner<3, 3>() = skew(s.angular);
  l.topRightCorner<3, 1>() = s.linear;
  return l;
}

// J = ∫ P Pᵀ dm about the body origin: [[∫ r rᵀ dm, m c], [m cᵀ, m]], with ∫ r rᵀ dm =
// ½ tr(I_O) 1 − I_O (Silver eq. 2.11, I_O the inertia tensor about the same origin).
Mat4 pseudo_inertia(const RigidInertia& y) {
  Mat4 j;
  j.topLeftCorner<3, 3>() = 0.5 * y.rotational.trace() * Mat3::Identity() - y.rotational;
  j.topRightCorner<3, 1>() = y.first_moment;
  j.bottomLeftCorner<1, 3>() = y.first_moment.transpose();
  j(3, 3) = y.mass;
  return j;
}

// tr(A Lᵀ) for a joint matrix L, whose last row is zero: the Frobenius product of the top rows.
double trace_product(const Mat4& a, const Mat4& l) {
  return a.topRows<3>().cwiseProduct(l.topRows<3>()).sum();
}

// The outward pass: position matrices, joint matrices and pseudo-inertias always; velocity
// matrices when kVelocity; acceleration matrices from q̇ (kVelocity) and q̈ (kAcceleration).
template <bool kVelocity, bool kAcceleration>
void outward_pass(const Model& model, Data& data, const double* q, const double* v,
                  const double* a) {
  data.bind(model, kHomogeneousWorkspaces);
  HomogeneousWorkspace& w = data.workspace<HomogeneousWorkspace>();
  w.W[0].setZero();
  w.H[0].setZero();
  double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    compose_joint_transform(model.joint_placements[i], joint, q + joint.idx_q, data.liMi[i]);
    const Mat4& m0i = w.oMi[i] = w.oMi[parent] * position_matrix(data.liMi[i]);
    const Mat4 m0i_inverse = inverse_position_matrix(m0i);
    Mat4 x = Mat4::Zero();
    Mat4 y = Mat4::Zero();
    for (int k = 0; k < joint.nv; ++k) {
      unit[k] = 1.0;
      Mat4& l = w.L[joint.idx_v + k];
      l.noalias() = m0i * joint_matrix(joint_motion(joint, unit)) * m0i_inverse;
      unit[k] = 0.0;
      if constexpr (kVelocity) x += v[joint.idx_v + k] * l;
      if constexpr (kAcceleration) y += a[joint.idx_v + k] * l;
    }
    if constexpr (kVelocity) {
      const Mat4& w_parent = w.W[parent];
      w.W[i] = w_parent + x;
      w.H[i] = w.H[parent] + y;
      w.H[i].noalias() += x * x;
      w.H[i].noalias() += 2.0 * w_parent * x;
    } else if constexpr (kAcceleration) {
      w.H[i] = w.H[parent] + y;
    }
    w.J[i].noalias() = m0i * pseudo_inertia(model.inertias[i]) * m0i.transpose();
  }
}

// τ_k = tr(Σ_h (H_{0,h} − H_g) J_h L_kᵀ), with H_g only when kGravity.
template <bool kVelocity, bool kAcceleration, bool kGravity>
const Eigen::VectorXd& generalized_forces(const Model& model, Data& data, const double* q,
                                          const double* v, const double* a) {
  outward_pass<kVelocity, kAcceleration>(model, data, q, v, a);
  HomogeneousWorkspace& w = data.workspace<HomogeneousWorkspace>();
  Mat4 h_g = Mat4::Zero();
  if constexpr (kGravity) h_g.topRightCorner<3, 1>() = model.gravity;
  const int n = model.nbodies();
  for (int i = 1; i < n; ++i) {
    if constexpr (kVelocity || kAcceleration) {
      w.P[i].noalias() = (w.H[i] - h_g) * w.J[i];
    } else {
      w.P[i].noalias() = -h_g * w.J[i];
    }
  }
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    for (int k = 0; k < joint.nv; ++k) {
      w.tau[joint.idx_v + k] = trace_product(w.P[i], w.L[joint.idx_v + k]);
    }
    const int parent = model.parent[i];
    if (parent > 0) w.P[parent] += w.P[i];
  }
  return w.tau;
}

}  // namespace

const Eigen::VectorXd& lagrange_homogeneous(const Model& model, Data& data, const ConstVectorRef& q,
                                            const ConstVectorRef& v, const ConstVectorRef& a) {
  assert(fits(model, data, q, v, a));
  return generalized_forces<true, true, true>(model, data, q.data(), v.data(), a.data());
}

const Eigen::VectorXd& lagrange_homogeneous_bias(const Model& model, Data& data,
                                                 const ConstVectorRef& q, const ConstVectorRef& v) {
  assert(fits(model, data, q, v));
  return generalized_forces<true, false, false>(model, data, q.data(), v.data(), nullptr);
}

const Eigen::VectorXd& lagrange_homogeneous_gravity(const Model& model, Data& data,
                                                    const ConstVectorRef& q) {
  assert(fits(model, data, q));
  return generalized_forces<false, false, true>(model, data, q.data(), nullptr, nullptr);
}

const Eigen::MatrixXd& lagrange_homogeneous_mass_matrix(const Model& model, Data& data,
                                                        const ConstVectorRef& q) {
  assert(fits(model, data, q));
  outward_pass<false, false>(model, data, q.data(), nullptr, nullptr);
  HomogeneousWorkspace& w = data.workspace<HomogeneousWorkspace>();
  Eigen::MatrixXd& mass = w.M;
  mass.setZero();
  for (int i = model.nbodies() - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const Mat4& composite = w.J[i];  // complete: every descendant has a larger index
    for (int k = 0; k < joint.nv; ++k) {
      const int col = joint.idx_v + k;
      // tr(L_r J^c L_kᵀ) = tr(L_r (L_k J^c)ᵀ) (J^c symmetric): one product per column.
      const Mat4 lj = w.L[col] * composite;
      for (int j = i; j > 0; j = model.parent[j]) {
        const Joint& ancestor = model.joints[j];
        for (int r = 0; r < ancestor.nv; ++r) {
          const int row = ancestor.idx_v + r;
          const double value = trace_product(lj, w.L[row]);
          mass(row, col) = value;
          mass(col, row) = value;
        }
      }
    }
    const int parent = model.parent[i];
    if (parent > 0) w.J[parent] += composite;
  }
  return mass;
}

}  // namespace torqued
