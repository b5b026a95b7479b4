// The outward step every world-coordinate recursion starts with (ABA and its variants, M⁻¹, the
// RNEA derivatives, the Coriolis matrix): Featherstone 1987, §4.4's absolute coordinates.
//   liMi = placement_i · X_J(q_i),  ⁰M_i = ⁰M_λ(i) · liMi,  ⁰S_i = ⁰X_i S_i
#pragma once

#include "engine/model/data.hpp"
#include "engine/model/joint_world.hpp"

namespace torqued {

// Places body i (data.liMi, data.oMi) and writes its world subspace columns into data.oS.
inline const Transform& place_in_world(const Model& model, Data& data, int i, const double* q) {
  const Joint& joint = model.joints[i];
  compose_joint_transform(model.joint_placements[i], joint, q + joint.idx_q, data.liMi[i]);
  const Transform& oMi = data.oMi[i] = data.oMi[model.parent[i]] * data.liMi[i];
  world_subspace(joint, oMi, data.oS.data() + 6 * joint.idx_v);
  return oMi;
}

// Places every body: the outward step alone, for what reads the world placements (the
// optimal-control residuals, placed_generalized_gravity_derivatives()).
inline void place_in_world(const Model& model, Data& data, const double* q) {
  for (int i = 1; i < model.nbodies(); ++i) place_in_world(model, data, i, q);
}

// ⁰S_i x for the joint's nv coordinates of x (velocities or accelerations), once ⁰S_i is placed.
inline Motion world_joint_motion(const Joint& joint, const Data& data, const double* x) {
  const double* s = data.oS.data() + 6 * joint.idx_v;
  Motion m = Motion::Zero();
  for (int k = 0; k < joint.nv; ++k, s += 6) {
    const double xk = x[joint.idx_v + k];
    m.linear += xk * Vec3(s[0], s[1], s[2]);
    m.angular += xk * Vec3(s[3], s[4], s[5]);
  }
  return m;
}

}  // namespace torqued
