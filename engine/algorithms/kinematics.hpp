// Forward kinematics: placements, spatial velocities and accelerations of every body, and the
// placements and velocities of named frames (Featherstone 1987, §4.4-4.5, the forward pass of
// RNEA without forces).
//   liMi = placement_i · X_J(q_i),  oMi = oM_parent · liMi
//   v_i = liMi⁻¹ v_parent + S_i q̇_i
//   a_i = liMi⁻¹ a_parent + S_i q̈_i + v_i × S_i q̇_i
// Velocities and accelerations are expressed in the body frame. Gravity is not included in a.
#pragma once

#include "engine/model/data.hpp"

namespace torqued {

using ConstVectorRef = Eigen::Ref<const Eigen::VectorXd>;

// The size contract of the engine's entry points, asserted in debug builds (the server validates
// every request before the engine sees it): `data` made for `model`, q of nq entries and each
// velocity-sized vector (v, a, τ, ...) of nv.
template <typename... VelocityLike>
bool fits(const Model& model, const Data& data, const ConstVectorRef& q,
          const VelocityLike&... velocity_like) {
  return fits(model, data) && q.size() == model.nq && ((velocity_like.size() == model.nv) && ...);
}

// Placements only (data.liMi, data.oMi).
void forward_kinematics(const Model& model, Data& data, const ConstVectorRef& q);
// Placements and velocities (data.v).
void forward_kinematics(const Model& model, Data& data, const ConstVectorRef& q,
                        const ConstVectorRef& v);
// Placements, velocities and accelerations (data.a).
void forward_kinematics(const Model& model, Data& data, const ConstVectorRef& q,
                        const ConstVectorRef& v, const ConstVectorRef& a);

// data.oMf for every frame, from data.oMi.
void update_frame_placements(const Model& model, Data& data);

// How a frame's velocity, acceleration or Jacobian is expressed:
//   kLocal: in the frame's own axes, at its origin;
//   kLocalWorldAligned: in world axes, at the frame's origin (linear part = velocity of the
//     frame origin);
//   kWorld: in world axes, at the world origin (the spatial twist).
enum class ReferenceFrame { kLocal, kLocalWorldAligned, kWorld };

// Velocity of a frame after forward_kinematics(q, v); data.oMi must be current.
Motion frame_velocity(const Model& model, const Data& data, int frame, ReferenceFrame reference);
// Spatial acceleration of a frame after forward_kinematics(q, v, a).
Motion frame_acceleration(const Model& model, const Data& data, int frame,
                          ReferenceFrame reference);
// World placement of a frame from data.oMi.
Transform frame_placement(const Model& model, const Data& data, int frame);

}  // namespace torqued
