// Engine Model → proto layout. Infinite limits are left unset, as the proto documents.
#include "server/models/model_layout.hpp"

#include <cmath>

namespace torqued::server {
namespace {

void set_vec3(const Vec3& v, v1::Vector3* out) {
  out->set_x(v.x());
  out->set_y(v.y());
  out->set_z(v.z());
}

v1::JointType joint_type(JointType type) {
  switch (type) {
    case JointType::kRevolute:
      return v1::JOINT_TYPE_REVOLUTE;
    case JointType::kContinuous:
      return v1::JOINT_TYPE_CONTINUOUS;
    case JointType::kPrismatic:
      return v1::JOINT_TYPE_PRISMATIC;
    case JointType::kHelical:
      return v1::JOINT_TYPE_HELICAL;
    case JointType::kSpherical:
      return v1::JOINT_TYPE_SPHERICAL;
    case JointType::kPlanar:
      return v1::JOINT_TYPE_PLANAR;
    case JointType::kFreeFlyer:
      return v1::JOINT_TYPE_FREE_FLYER;
    case JointType::kFixed:
      return v1::JOINT_TYPE_FIXED;
  }
  return v1::JOINT_TYPE_UNSPECIFIED;
}

v1::FrameKind frame_kind(FrameKind kind) {
  switch (kind) {
    case FrameKind::kBody:
      return v1::FRAME_KIND_BODY;
    case FrameKind::kFixedLink:
      return v1::FRAME_KIND_FIXED_LINK;
    case FrameKind::kJoint:
      return v1::FRAME_KIND_JOINT;
  }
  return v1::FRAME_KIND_UNSPECIFIED;
}

bool is_one_dof_axis(JointType type) {
  return type == JointType::kRevolute || type == JointType::kContinuous ||
         type == JointType::kPrismatic || type == JointType::kHelical;
}

}  // namespace

v1::ConstraintRows constraint_rows(const BilateralConstraint& constraint, int offset) {
  v1::ConstraintRows rows;
  rows.set_name(constraint.name);
  switch (constraint.type) {
    case ConstraintType::kWeld:
      rows.set_type(v1::CONSTRAINT_TYPE_WELD);
      break;
    case ConstraintType::kPoint:
      rows.set_type(v1::CONSTRAINT_TYPE_POINT);
      break;
    case ConstraintType::kRevolute:
      rows.set_type(v1::CONSTRAINT_TYPE_REVOLUTE);
      break;
    case ConstraintType::kPrismatic:
      rows.set_type(v1::CONSTRAINT_TYPE_PRISMATIC);
      break;
  }
  rows.set_offset(offset);
  rows.set_dimension(constraint_dimension(constraint.type));
  return rows;
}

v1::Model make_layout(const Model& model, const std::string& id, v1::ModelOrigin origin) {
  v1::Model out;
  out.set_id(id);
  out.set_name(model.name);
  out.set_base(model.floating_base ? v1::BASE_TYPE_FLOATING : v1::BASE_TYPE_FIXED);
  set_vec3(model.gravity, out.mutable_gravity());
  out.set_nq(model.nq);
  out.set_nv(model.nv);
  for (int i = 0; i < model.nbodies(); ++i) {
    v1::Body* body = out.add_bodies();
    body->set_name(model.body_names[i]);
    body->set_parent(model.parent[i]);
    body->set_mass(model.inertias[i].mass);
    set_vec3(model.inertias[i].com(), body->mutable_com());
    if (i == 0) continue;
    body->set_joint(model.joint_names[i]);
    const Joint& j = model.joints[i];
    v1::Joint* joint = out.add_joints();
    joint->set_name(model.joint_names[i]);
    joint->set_type(joint_type(j.type));
    joint->set_body(i);
    joint->set_idx_q(j.idx_q);
    joint->set_idx_v(j.idx_v);
    joint->set_nq(j.nq);
    joint->set_nv(j.nv);
    if (is_one_dof_axis(j.type)) set_vec3(j.axis, joint->mutable_axis());
    joint->set_pitch(j.pitch);
    const JointLimits& l = model.limits[i];
    v1::JointLimits* limits = joint->mutable_limits();
    if (std::isfinite(l.lower)) limits->set_lower(l.lower);
    if (std::isfinite(l.upper)) limits->set_upper(l.upper);
    if (std::isfinite(l.velocity)) limits->set_velocity(l.velocity);
    if (std::isfinite(l.effort)) limits->set_effort(l.effort);
  }
  for (const Frame& f : model.frames) {
    v1::Frame* frame = out.add_frames();
    frame->set_name(f.name);
    frame->set_kind(frame_kind(f.kind));
    frame->set_body(f.body);
    set_vec3(f.placement.translation, frame->mutable_position());
    const Eigen::Quaterniond quat(f.placement.rotation);
    v1::Quaternion* o = frame->mutable_orientation();
    o->set_x(quat.x());
    o->set_y(quat.y());
    o->set_z(quat.z());
    o->set_w(quat.w());
  }
  for (const std::string& w : model.warnings) out.add_warnings(w);
  out.set_origin(origin);
  int offset = 0;
  for (const BilateralConstraint& loop : model.loop_closures) {
    *out.add_loop_closures() = constraint_rows(loop, offset);
    offset += constraint_dimension(loop.type);
  }
  return out;
}

v1::ModelSummary make_summary(const v1::Model& layout) {
  v1::ModelSummary s;
  s.set_id(layout.id());
  s.set_name(layout.name());
  s.set_base(layout.base());
  s.set_nq(layout.nq());
  s.set_nv(layout.nv());
  s.set_moving_bodies(layout.bodies_size() - 1);
  s.set_origin(layout.origin());
  return s;
}

}  // namespace torqued::server
