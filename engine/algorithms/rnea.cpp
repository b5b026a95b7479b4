// Recursive Newton-Euler inverse dynamics in body coordinates (Featherstone 1987, §4.5, eqs
// 4.11-4.15; Kim 2012, §2.1). Gravity enters as a fictitious acceleration −g of the base.
//   outward, i = 1..N:  v_i = liMi⁻¹ v_λ(i) + S_i q̇_i
//                       a_i = liMi⁻¹ a_λ(i) + S_i q̈_i + v_i × S_i q̇_i
//                       f_i = I_i a_i + v_i ×* I_i v_i − f_ext,i
//   inward,  i = N..1:  τ_i = S_iᵀ f_i,   f_λ(i) += liMi f_i
// Generalized gravity and the nonlinear effects are the same recursion with terms known to be
// zero dropped at compile time.
#include "engine/algorithms/rnea.hpp"

#include <cassert>

namespace torqued {

namespace {

template <bool kVelocity, bool kAcceleration>
void rnea_recursion(const Model& model, Data& data, const double* q, const double* v,
                    const double* a, std::span<const Force> external_forces) {
  data.v[0] = Motion::Zero();
  data.a_gf[0] = {-model.gravity, Vec3::Zero()};
  const int n = model.nbodies();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    Transform& liMi = data.liMi[i];
    compose_joint_transform(model.joint_placements[i], joint, q + joint.idx_q, liMi);
    const RigidInertia& inertia = model.inertias[i];
    Motion& acc = data.a_gf[i];
    acc = liMi.act_inverse(data.a_gf[parent]);
    if constexpr (kVelocity) {
      const Motion vj = joint_motion(joint, v + joint.idx_v);
      Motion& vel = data.v[i];
      vel = liMi.act_inverse(data.v[parent]);
      vel += vj;
      acc += vel.cross(vj);
      if constexpr (kAcceleration) add_joint_motion(joint, a + joint.idx_v, acc);
      data.f[i] = inertia * acc + vel.cross(inertia * vel);
    } else {
      if constexpr (kAcceleration) add_joint_motion(joint, a + joint.idx_v, acc);
      data.f[i] = inertia * acc;
    }
  }
  if (!external_forces.empty()) {
    for (int i = 1; i < n; ++i) data.f[i] -= external_forces[i];
  }
  double* tau = data.tau.data();
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    project_force(joint, data.f[i], tau + joint.idx_v);
    const int parent = model.parent[i];
    if (parent > 0) data.f[parent] += data.liMi[i].act(data.f[i]);
  }
}

}  // namespace

const Eigen::VectorXd& rnea(const Model& model, Data& data, const ConstVectorRef& q,
                            const ConstVectorRef& v, const ConstVectorRef& a,
                            std::span<const Force> external_forces) {
  assert(fits(model, data, q, v, a));
  assert(external_forces.empty() || static_cast<int>(external_forces.size()) == model.nbodies());
  rnea_recursion<true, true>(model, data, q.data(), v.data(), a.data(), external_forces);
  return data.tau;
}

const Eigen::VectorXd& nonlinear_effects(const Model& model, Data& data, const ConstVectorRef& q,
                                         const ConstVectorRef& v) {
  assert(fits(model, data, q, v));
  rnea_recursion<true, false>(model, data, q.data(), v.data(), nullptr, {});
  return data.tau;
}

const Eigen::VectorXd& generalized_gravity(const Model& model, Data& data,
                                           const ConstVectorRef& q) {
  assert(fits(model, data, q));
  rnea_recursion<false, false>(model, data, q.data(), nullptr, nullptr, {});
  return data.tau;
}

}  // namespace torqued
