// Denavit-Hartenberg tables to ModelSpec (see dh.hpp for both conventions and the frames).
//
// Standard convention (Paul 1981): the joint variable acts first in ^{i-1}T_i, so the fixed part
// of link i is K_i = Rz(θ_i) Tz(d_i) Tx(a_i) Rx(α_i) (Rz and Tz commute, so a prismatic joint's
// Tz(q) also factors out to the left). Link i's body frame is DH frame i-1 moved by q_i, joint
// i+1 sits at K_i in it, and link i's inertia (given in DH frame i) is carried by K_i.
// Modified convention (Craig 2005, eq. 3.6): the joint variable acts last, so link i's body frame
// is DH frame i and joint i sits at Rx(α_{i-1}) Tx(a_{i-1}) Rz(θ_i) Tz(d_i) in link i-1.
#include "engine/io/dh.hpp"

#include <cmath>
#include <utility>

#include "engine/model/quoted.hpp"

namespace torqued {
namespace {

Transform rot_x(double angle) { return {axis_angle_rotation(Vec3::UnitX(), angle), Vec3::Zero()}; }
Transform rot_z(double angle) { return {axis_angle_rotation(Vec3::UnitZ(), angle), Vec3::Zero()}; }
Transform trans_x(double a) { return {Mat3::Identity(), Vec3(a, 0.0, 0.0)}; }
Transform trans_z(double d) { return {Mat3::Identity(), Vec3(0.0, 0.0, d)}; }

// The placements below go into model ids, which must not depend on the build: these functions
// are flattened and the file is compiled without contraction into FMA (see model/build.cpp).
// Standard convention: DH frame i in link i's body frame (Rz(θ) Tz(d) Tx(a) Rx(α)).
[[gnu::flatten]] Transform standard_dh_frame(const DhLink& row) {
  return rot_z(row.theta) * trans_z(row.d) * trans_x(row.a) * rot_x(row.alpha);
}

// Modified convention: joint frame i in link i-1's frame (Rx(α) Tx(a) Rz(θ) Tz(d)).
[[gnu::flatten]] Transform modified_dh_frame(const DhLink& row) {
  return rot_x(row.alpha) * trans_x(row.a) * rot_z(row.theta) * trans_z(row.d);
}

[[gnu::flatten]] Vec3 point_in(const Transform& frame, const Vec3& point) {
  return frame.act(point);
}

void check_row(const DhLink& row, const std::string& joint_name) {
  if (row.type != JointType::kRevolute && row.type != JointType::kPrismatic) {
    throw ModelError("joint " + quoted(joint_name) + ": a DH joint is revolute or prismatic, not " +
                     std::string(joint_type_name(row.type)));
  }
  const std::pair<const char*, double> parameters[] = {
      {"a", row.a}, {"alpha", row.alpha}, {"d", row.d}, {"theta", row.theta}};
  for (const auto& [parameter, value] : parameters) {
    if (!std::isfinite(value)) {
      throw ModelError("joint " + quoted(joint_name) + ": non-finite DH parameter " + parameter +
                       " (" + std::to_string(value) + ")");
    }
  }
}

}  // namespace

ModelSpec dh_to_spec(const DhTable& table) {
  ModelSpec spec;
  spec.name = table.name;
  spec.floating_base = table.floating_base;
  spec.gravity = table.gravity;
  spec.links.push_back({table.base_link, InertialSpec{}});

  const bool standard = table.convention == DhConvention::kStandard;
  std::string parent = table.base_link;
  // Standard convention: placement of DH frame i-1 in link i-1's body frame.
  Transform previous_dh_frame = Transform::Identity();
  for (std::size_t k = 0; k < table.links.size(); ++k) {
    const DhLink& row = table.links[k];
    const std::string index = std::to_string(k + 1);
    const std::string link_name = row.name.empty() ? "link" + index : row.name;
    const std::string joint_name = row.joint_name.empty() ? "joint" + index : row.joint_name;
    check_row(row, joint_name);

    JointSpec joint;
    joint.name = joint_name;
    joint.type = row.type;
    joint.parent_link = parent;
    joint.child_link = link_name;
    joint.axis = Vec3::UnitZ();
    joint.limits = row.limits;

    LinkSpec link;
    link.name = link_name;
    link.inertial.mass = row.mass;
    link.inertial.inertia = row.inertia;
    if (standard) {
      const Transform dh_frame = standard_dh_frame(row);
      joint.origin = previous_dh_frame;
      link.inertial.origin = {dh_frame.rotation, point_in(dh_frame, row.com)};
      spec.joints.push_back(std::move(joint));
      spec.links.push_back(std::move(link));

      JointSpec weld;
      weld.name = joint_name + "_dh";
      weld.type = JointType::kFixed;
      weld.parent_link = link_name;
      weld.child_link = link_name + "_dh";
      weld.origin = dh_frame;
      spec.joints.push_back(std::move(weld));
      spec.links.push_back({link_name + "_dh", InertialSpec{}});
      previous_dh_frame = dh_frame;
    } else {
      joint.origin = modified_dh_frame(row);
      link.inertial.origin = {Mat3::Identity(), row.com};
      spec.joints.push_back(std::move(joint));
      spec.links.push_back(std::move(link));
    }
    parent = link_name;
  }
  return spec;
}

}  // namespace torqued
