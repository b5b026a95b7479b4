// The RNEA derivatives (rnea_derivatives.cpp, Carpentier & Mansard 2018) at q̇ = q̈ = 0, where
// they reduce to sums of masses and first moments. Every body then has the world acceleration
// a_g = (−g, 0), so ψ = χ = 0 and the coupling B vanishes; a body's force is I_i a_g = (m_i a,
// h_i × a) with a = −g and h_i = m_i c_i its first moment in the world, and a subtree's is
// F_J = (M_J a, H_J × a) with its mass M_J and first moment H_J. The rate φ_k = a_g × ⁰S_k is the
// pure linear motion (a × ω_k, 0) (ω_k the angular part of ⁰S_k), on which a composite acts as
// Y (x, 0) = (M x, H × x). For DOFs k of joint K and j of joint J:
//   g_j = S_jᵀ F_J
//   K ancestor of J or K = J:  ∂g_j/∂q_k = S_jᵀ Y_J φ_k = φ_kᵀ u_j,   u_j = M_J s_j + ω_j × H_J
//   J strict ancestor of K:    ∂g_j/∂q_k = S_jᵀ (S_k ×* F_K + Y_K φ_k)
// (s_j the linear part of ⁰S_j): one 3-vector product per pair of related DOFs, against five
// 6-vector products and the bodies' rotational inertias in rnea_configuration_derivatives().
#include "engine/algorithms/generalized_gravity_derivatives.hpp"

#include <cassert>

#include "engine/algorithms/world_frame.hpp"

namespace torqued {

namespace {

Vec3 linear_at(const double* s) { return {s[0], s[1], s[2]}; }
Vec3 angular_at(const double* s) { return {s[3], s[4], s[5]}; }

// g into data.tau and, with kDerivatives, ∂g/∂q into w.dtau_dq, from the bodies placed in data.
template <bool kDerivatives>
void gravity_pass(const Model& model, Data& data, RneaDerivativesWorkspace& w) {
  const int n = model.nbodies();
  const int nv = model.nv;
  const Vec3 a = -model.gravity;
  const double* os = data.oS.data();
  // Per body, summed over its subtree by the backward pass: the mass and first moment in
  // composite[i] (its rotational inertia is not used), and φ's linear part per DOF in da_dq.
  for (int i = 1; i < n; ++i) {
    const Transform& oMi = data.oMi[i];
    const RigidInertia& body = model.inertias[i];
    RigidInertia& composite = w.composite[i];
    composite.mass = body.mass;
    composite.first_moment = oMi.rotation * body.first_moment + body.mass * oMi.translation;
    if constexpr (kDerivatives) {
      const Joint& joint = model.joints[i];
      for (int k = 0; k < joint.nv; ++k) {
        const int col = joint.idx_v + k;
        w.da_dq.col(col).head<3>() = a.cross(angular_at(os + 6 * col));
      }
    }
  }

  double* dq = w.dtau_dq.data();
  double* g = data.tau.data();
  InterruptionPoll poll(data.interruption);
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const double mass = w.composite[i].mass;
    const Vec3& moment = w.composite[i].first_moment;
    const Force force{mass * a, moment.cross(a)};
    [[maybe_unused]] int pairs = 0;
    for (int k = 0; k < joint.nv; ++k) {
      const int col = joint.idx_v + k;
      const Vec3 s = linear_at(os + 6 * col);
      const Vec3 omega = angular_at(os + 6 * col);
      g[col] = s.dot(force.linear) + omega.dot(force.angular);
      if constexpr (!kDerivatives) continue;
      // Row col against the DOFs of this joint and of its ancestors.
      const Vec3 u = mass * s + omega.cross(moment);
      for (int anc = i; anc > 0; anc = model.parent[anc]) {
        const Joint& aj = model.joints[anc];
        for (int r = 0; r < aj.nv; ++r) {
          const int other = aj.idx_v + r;
          dq[col + static_cast<std::ptrdiff_t>(other) * nv] = u.dot(w.da_dq.col(other).head<3>());
        }
        pairs += aj.nv;
      }
      if (model.parent[i] == 0) continue;
      // Column col against the DOFs of the strict ancestors: S_k ×* F_K + Y_K φ_k.
      const Vec3 phi = w.da_dq.col(col).head<3>();
      const Vec3 linear = omega.cross(force.linear) + mass * phi;
      const Vec3 angular = omega.cross(force.angular) + s.cross(force.linear) + moment.cross(phi);
      double* dq_col = dq + static_cast<std::ptrdiff_t>(col) * nv;
      for (int anc = model.parent[i]; anc > 0; anc = model.parent[anc]) {
        const Joint& aj = model.joints[anc];
        for (int r = 0; r < aj.nv; ++r) {
          const double* s_o = os + 6 * (aj.idx_v + r);
          dq_col[aj.idx_v + r] = linear.dot(linear_at(s_o)) + angular.dot(angular_at(s_o));
        }
      }
    }
    if constexpr (kDerivatives) poll.add(6.0 * pairs);
    const int parent = model.parent[i];
    if (parent > 0) {
      w.composite[parent].mass += mass;
      w.composite[parent].first_moment += moment;
    }
  }
}

}  // namespace

const RneaDerivativesWorkspace& generalized_gravity_derivatives(const Model& model, Data& data,
                                                                const ConstVectorRef& q) {
  assert(fits(model, data, q));
  place_in_world(model, data, q.data());
  return placed_generalized_gravity_derivatives(model, data);
}

const RneaDerivativesWorkspace& placed_generalized_gravity_derivatives(const Model& model,
                                                                       Data& data) {
  data.bind(model, kGeneralizedGravityDerivativesWorkspaces);
  RneaDerivativesWorkspace& w = data.workspace<RneaDerivativesWorkspace>();
  gravity_pass<true>(model, data, w);
  return w;
}

const Eigen::VectorXd& placed_generalized_gravity(const Model& model, Data& data) {
  data.bind(model, kGeneralizedGravityDerivativesWorkspaces);
  gravity_pass<false>(model, data, data.workspace<RneaDerivativesWorkspace>());
  return data.tau;
}

}  // namespace torqued
