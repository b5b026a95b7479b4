// The explicit model specification: links and the joints between them, the way URDF describes a
// robot. The URDF, MJCF, SDF and DH readers (engine/io) produce one; the service's explicit spec
// mirrors it; build_model() turns any of them into a validated Model.
#pragma once

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
  // Placement of the child link frame in the joint frame (at q = 0 for a moving joint). Identity,
  // as in URDF, when the joint frame is the child link's frame. An SDF joint may sit anywhere in
  // its child link, and MJCF puts a joint at a point of its body: the body's frame is then the
  // joint frame, and the link a frame on it.
  Transform child_link_placement = Transform::Identity();
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

struct ModelSpec {
  std::string name;
  std::vector<LinkSpec> links;
  std::vector<JointSpec> joints;
  std::vector<LoopClosureSpec> loop_closures;
  // Adds a free-flyer named "root_joint" between the world and the root link.
  bool floating_base = false;
  // False: each link's child joints are taken in order of joint name (URDF's order, which model
  // ids and the API's q layout depend on). True: in the order of `joints` (SDF and MJCF files
  // order them as written).
  bool children_in_given_order = false;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);
  // Messages from the reader about input it accepted but ignored (e.g. <mimic>); build_model()
  // copies them into the Model's warnings.
  std::vector<std::string> warnings;
};

}  // namespace torqued
