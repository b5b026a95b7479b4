// Denavit-Hartenberg tables, in the standard and the modified (Craig) convention, turned into a
// ModelSpec: a serial chain of revolute/prismatic joints from `base_link`, joint i rotating about
// (or sliding along) its z axis.
//
// Row i of a table (i = 1..n) describes joint i and link i; DH frame 0 is the base link's frame.
//   kStandard (Denavit-Hartenberg 1955, Paul 1981): the row holds (θ_i, d_i, a_i, α_i) and
//     ^{i-1}T_i = Rz(θ_i) Tz(d_i) Tx(a_i) Rx(α_i); joint i moves about z_{i-1}.
//   kModified (Craig, "Introduction to Robotics", §3.4): the row holds (α_{i-1}, a_{i-1}, θ_i,
//     d_i) as Craig tabulates it, i.e. `alpha` and `a` of row i are the twist and length of the
//     PREVIOUS link, and ^{i-1}T_i = Rx(α_{i-1}) Tx(a_{i-1}) Rz(θ_i) Tz(d_i); joint i moves about
//     z_i. Row 1's a and alpha place joint 1 in the base frame (usually 0).
// The joint variable q_i adds to θ_i (revolute) or d_i (prismatic): the table's θ_i (revolute) or
// d_i (prismatic) is the constant offset of q_i = 0.
//
// Frames: in the modified convention link i's frame is DH frame i. In the standard convention
// DH frame i does not lie on joint i's axis, so link i's body frame is DH frame i-1 turned (or
// slid) by q_i, and DH frame i is a named frame "<link name>_dh" on link i, attached by a fixed
// joint "<joint name>_dh" (so the end-effector frame of a standard table is "<last link>_dh").
// Link i's mass properties are given in DH frame i in both conventions.
#pragma once

#include <string>
#include <vector>

#include "engine/model/build.hpp"

namespace torqued {

enum class DhConvention { kStandard, kModified };

struct DhLink {
  std::string name;                       // link name; "link<i>" when empty
  std::string joint_name;                 // "joint<i>" when empty
  JointType type = JointType::kRevolute;  // kRevolute or kPrismatic
  double a = 0.0;
  double alpha = 0.0;
  double d = 0.0;
  double theta = 0.0;
  double mass = 0.0;
  Vec3 com = Vec3::Zero();      // in DH frame i
  Mat3 inertia = Mat3::Zero();  // about the centre of mass, DH frame i axes
  JointLimits limits;
};

struct DhTable {
  std::string name;
  DhConvention convention = DhConvention::kStandard;
  std::vector<DhLink> links;
  std::string base_link = "base";
  bool floating_base = false;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);
};

// Throws ModelError naming the joint for a joint type other than revolute/prismatic, or naming
// the joint and the parameter (a, alpha, d or theta) for a non-finite DH parameter. The result goes
// through build_model() for the rest of the checks.
ModelSpec dh_to_spec(const DhTable& table);

}  // namespace torqued
