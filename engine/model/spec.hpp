// The explicit model specification: links and the joints between them, the way URDF describes a
// robot. The URDF, MJCF and DH readers (engine/io) produce one; the service's explicit spec
// mirrors it; build_model() turns any of them into a validated Model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.hpp"

namespace torqued {

struct InertialSpec {
  double mass = 0.0;
  // Placement of the inertial frame in the link frame (URDF's <inertial><origin>).
  Transform origin = Transform::Identity();
  // Rotational inertia about the centre of mass, in the inertial frame.
  Mat3 inertia = Mat3::Zero();
};

struct LinkSpec {
  std::string name;
  InertialSpec inertial;
};

struct JointSpec {
  std::string name;
  JointType type = JointType::kRevolute;
  std::string parent_link;
  std::string child_link;
  // Placement of the joint frame in the parent link frame.
  Transform origin = Transform::Identity();
  // Placement of the child link frame in the joint frame at q = 0. The identity for URDF, whose
  // joint frame is its child link's frame; MJCF puts a joint at a point of its body, so that the
  // joint frame is there and the body frame is offset from it.
  Transform child_origin = Transform::Identity();
  Vec3 axis = Vec3::UnitX();  // URDF's default; need not be normalised, must not be zero
  double pitch = 0.0;         // helical only, metres per radian
  JointLimits limits;
};

// A loop closure: the constraint frame `origin1` in link1 is held to the frame `origin2` in link2
// as `type` says (model.hpp). link2 may be the world: empty or "world" (origin2 is then a world
// placement), unless the model has a link of that name.
struct LoopClosureSpec {
  std::string name;
  ConstraintType type = ConstraintType::kWeld;
  std::string link1;
  Transform origin1 = Transform::Identity();
  std::string link2;
  Transform origin2 = Transform::Identity();
};

// The order in which build_model() walks a link's child joints, hence the order of the bodies
// and of the q and v coordinates.
enum class ChildOrder : std::uint8_t {
  kByJointName,  // sorted by name: urdfdom's and Pinocchio's order for URDF, which the API promises
  kAsListed,     // the order of ModelSpec::joints: MJCF's document order
};

struct ModelSpec {
  std::string name;
  std::vector<LinkSpec> links;
  std::vector<JointSpec> joints;
  std::vector<LoopClosureSpec> loop_closures;
  ChildOrder child_order = ChildOrder::kByJointName;
  // Adds a free-flyer named "root_joint" between the world and the root link.
  bool floating_base = false;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);
  // Messages from the reader about input it accepted but ignored (e.g. <mimic>); build_model()
  // copies them into the Model's warnings.
  std::vector<std::string> warnings;
};

}  // namespace torqued
