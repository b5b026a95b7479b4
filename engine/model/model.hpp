// The robot model: an immutable kinematic tree in Featherstone's parent-array form (1987, §7.2).
//
// Body 0 is the fixed world (or the fixed base, whose own inertia never moves); bodies 1..N move,
// each with the joint that connects it to its parent, in topological order: parent[i] < i.
// Body i's frame is its joint's child frame (its link's frame, unless the source placed the
// joint elsewhere in the link: JointSpec::child_link_placement). Fixed joints are merged at build
// time: their links become named frames on the body they are welded to. A Model is built once by
// build_model() (model/build.hpp), validated there, and shared read-only between threads;
// per-thread scratch lives in Data.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/joint.hpp"
#include "engine/spatial/inertia.hpp"

namespace torqued {

enum class FrameKind : std::uint8_t { kBody, kFixedLink, kJoint };

// How a frame reference spells a kind: "body", "fixed_link", "joint".
std::string_view frame_kind_name(FrameKind kind);

// A named frame rigidly attached to a body: every link of the source (moving or merged) and
// every joint. A moving joint's frame is the frame of the body it moves; its child link's frame
// is there too, unless the source offsets the link from the joint
// (JointSpec::child_link_placement). Link names are unique and joint names are unique, but a
// link and a joint may share a name (an MJCF body and its joint, a URDF joint and its child
// link): two frames of that name, told apart by kind.
struct Frame {
  std::string name;
  FrameKind kind = FrameKind::kBody;
  int body = 0;
  Transform placement = Transform::Identity();  // in the body frame
  // Another frame has this name (the link's, or the joint's): set by build_model().
  bool name_shared = false;
};

// A bilateral constraint between a frame on one body and a frame on another (or the world): a
// loop closure of the model (Featherstone 2008, ch. 8; 1987, ch. 9) or a per-call constraint.
// Which relative motions of frame 2 with respect to frame 1 it forbids:
enum class ConstraintType : std::uint8_t {
  kWeld,       // all six: the frames stay coincident (6 rows)
  kPoint,      // the origins coincide, rotation free: a ball joint (3 rows)
  kRevolute,   // all but rotation about frame 1's z axis (5 rows)
  kPrismatic,  // all but translation along frame 1's z axis (5 rows)
};

// Number of scalar constraints (rows of the constraint Jacobian) of a type.
int constraint_dimension(ConstraintType type);

struct BilateralConstraint {
  std::string name;
  ConstraintType type = ConstraintType::kWeld;
  // The constraint frames: placement1 in body1's frame, placement2 in body2's frame. Body 0 is
  // the world (or the fixed base): placement2 is then a world placement.
  int body1 = 0;
  Transform placement1 = Transform::Identity();
  int body2 = 0;
  Transform placement2 = Transform::Identity();
};

struct JointLimits {
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  double velocity = std::numeric_limits<double>::infinity();
  double effort = std::numeric_limits<double>::infinity();
};

struct Model {
  std::string name;
  int nq = 0;
  int nv = 0;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);  // world frame

  // Per body, index 0 = world. Vectors of size nbodies().
  std::vector<int> parent;                  // parent[0] = -1
  std::vector<std::string> body_names;      // the link name of each body
  std::vector<std::string> joint_names;     // joint_names[0] = "universe"
  std::vector<Joint> joints;                // joints[0] unused
  std::vector<JointLimits> limits;          // per body, for its joint's coordinates (1-DOF)
  std::vector<Transform> joint_placements;  // parent body frame -> joint frame at q = 0
  std::vector<RigidInertia> inertias;       // body frame, merged fixed links included
  std::vector<int> subtree_end;             // bodies i..subtree_end[i]-1 are i's subtree
  std::vector<int> depth;                   // number of moving ancestors, body included
  // kX/kY/kZ when the rotation from the body to its parent turns about that coordinate axis for
  // every q (a revolute about a coordinate axis under a placement without rotation, as in most
  // URDFs); kGeneral otherwise. Lets the CRBA rotate forces with 2x2 blocks (crba.cpp).
  std::vector<AxisKind> parent_rotation_axis;

  // Per generalized velocity: the body whose joint owns it.
  std::vector<int> body_of_v;

  std::vector<Frame> frames;

  // Loop closures (kinematic loops cut into the tree), each holding its two constraint frames
  // together; see constraint_jacobian.hpp.
  std::vector<BilateralConstraint> loop_closures;

  // Messages about things that are accepted but worth knowing (see build.hpp).
  std::vector<std::string> warnings;

  // True when the robot has a free-flyer root (first joint).
  bool floating_base = false;

  int nbodies() const { return static_cast<int>(parent.size()); }
  // -1 when there is no such name.
  int find_body(std::string_view name) const;
  int find_joint(std::string_view name) const;

  // Frames are named by reference (docs/api.md, "Frames"): a frame's name, or KIND:NAME
  // (frame_kind_name) for the frame of that kind with that name, which tells apart the frames
  // that share a name. The frames `reference` may mean, in frames order: those named
  // `reference`, and the one KIND:NAME picks.
  std::vector<int> frames_meant_by(std::string_view reference) const;
  // The frame `reference` means; -1 when it means none, and when it means several (which
  // frames_meant_by lists): an ambiguous name never resolves to one of its frames.
  int find_frame(std::string_view reference) const;
  // The reference that means frame `frame` alone: its name, or KIND:NAME when another frame
  // shares the name.
  std::string frame_reference(int frame) const;

  // The neutral configuration: zero angles and displacements, identity quaternions.
  Eigen::VectorXd neutral_configuration() const;
};

using ModelPtr = std::shared_ptr<const Model>;

}  // namespace torqued
