// Forward kinematics (Featherstone 1987, §4.5: the outward pass of RNEA without forces).
//   liMi = placement_i · X_J(q_i),   oMi = oM_parent · liMi
//   v_i  = liMi⁻¹ v_parent + S_i q̇_i
//   a_i  = liMi⁻¹ a_parent + S_i q̈_i + v_i × S_i q̇_i   (S_i is constant in the body frame)
#include "engine/algorithms/kinematics.hpp"

#include <cassert>

namespace torqued {

void forward_kinematics(const Model& model, Data& data, const ConstVectorRef& q) {
  assert(fits(model, data, q));
  const double* qp = q.data();
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    compose_joint_transform(model.joint_placements[i], joint, qp + joint.idx_q, data.liMi[i]);
    data.oMi[i] = data.oMi[model.parent[i]] * data.liMi[i];
  }
}

void forward_kinematics(const Model& model, Data& data, const ConstVectorRef& q,
                        const ConstVectorRef& v) {
  assert(fits(model, data, q, v));
  const double* qp = q.data();
  const double* vp = v.data();
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    compose_joint_transform(model.joint_placements[i], joint, qp + joint.idx_q, data.liMi[i]);
    data.oMi[i] = data.oMi[parent] * data.liMi[i];
    data.v[i] = data.liMi[i].act_inverse(data.v[parent]);
    add_joint_motion(joint, vp + joint.idx_v, data.v[i]);
  }
}

void forward_kinematics(const Model& model, Data& data, const ConstVectorRef& q,
                        const ConstVectorRef& v, const ConstVectorRef& a) {
  assert(fits(model, data, q, v, a));
  const double* qp = q.data();
  const double* vp = v.data();
  const double* ap = a.data();
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    compose_joint_transform(model.joint_placements[i], joint, qp + joint.idx_q, data.liMi[i]);
    data.oMi[i] = data.oMi[parent] * data.liMi[i];
    const Motion vj = joint_motion(joint, vp + joint.idx_v);
    data.v[i] = data.liMi[i].act_inverse(data.v[parent]) + vj;
    data.a[i] = data.liMi[i].act_inverse(data.a[parent]) + data.v[i].cross(vj);
    add_joint_motion(joint, ap + joint.idx_v, data.a[i]);
  }
}

void update_frame_placements(const Model& model, Data& data) {
  for (std::size_t k = 0; k < model.frames.size(); ++k) {
    const Frame& frame = model.frames[k];
    data.oMf[k] = data.oMi[frame.body] * frame.placement;
  }
}

Transform frame_placement(const Model& model, const Data& data, int frame) {
  const Frame& f = model.frames[frame];
  return data.oMi[f.body] * f.placement;
}

namespace {

// A body-frame motion re-expressed as the reference asks, for a frame with world placement oMf.
Motion express(const Motion& body_motion, const Transform& oMi, const Transform& frame_placement,
               const Transform& oMf, ReferenceFrame reference) {
  switch (reference) {
    case ReferenceFrame::kLocal:
      return frame_placement.act_inverse(body_motion);
    case ReferenceFrame::kWorld:
      return oMi.act(body_motion);
    case ReferenceFrame::kLocalWorldAligned: {
      const Motion world = oMi.act(body_motion);
      return {world.linear + world.angular.cross(oMf.translation), world.angular};
    }
  }
  return body_motion;
}

}  // namespace

Motion frame_velocity(const Model& model, const Data& data, int frame, ReferenceFrame reference) {
  const Frame& f = model.frames[frame];
  return express(data.v[f.body], data.oMi[f.body], f.placement, data.oMi[f.body] * f.placement,
                 reference);
}

Motion frame_acceleration(const Model& model, const Data& data, int frame,
                          ReferenceFrame reference) {
  const Frame& f = model.frames[frame];
  return express(data.a[f.body], data.oMi[f.body], f.placement, data.oMi[f.body] * f.placement,
                 reference);
}

}  // namespace torqued
