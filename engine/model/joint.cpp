// Joint kinds: names, sizes, transforms and motion subspaces (Featherstone 1987, §7.3-7.4).
#include "engine/model/joint.hpp"

#include <algorithm>

namespace torqued {

std::string_view joint_type_name(JointType type) {
  switch (type) {
    case JointType::kRevolute:
      return "revolute";
    case JointType::kContinuous:
      return "continuous";
    case JointType::kPrismatic:
      return "prismatic";
    case JointType::kHelical:
      return "helical";
    case JointType::kSpherical:
      return "spherical";
    case JointType::kPlanar:
      return "planar";
    case JointType::kFreeFlyer:
      return "free_flyer";
    case JointType::kFixed:
      return "fixed";
  }
  return "unknown";
}

bool parse_joint_type(std::string_view name, JointType& type) {
  static constexpr JointType kAll[] = {
      JointType::kRevolute,  JointType::kContinuous, JointType::kPrismatic, JointType::kHelical,
      JointType::kSpherical, JointType::kPlanar,     JointType::kFreeFlyer, JointType::kFixed};
  for (JointType candidate : kAll) {
    if (joint_type_name(candidate) == name) {
      type = candidate;
      return true;
    }
  }
  if (name == "floating") {
    type = JointType::kFreeFlyer;
    return true;
  }
  if (name == "screw") {
    type = JointType::kHelical;
    return true;
  }
  return false;
}

int joint_nq(JointType type) {
  switch (type) {
    case JointType::kSpherical:
      return 4;
    case JointType::kPlanar:
      return 3;
    case JointType::kFreeFlyer:
      return 7;
    case JointType::kFixed:
      return 0;
    default:
      return 1;
  }
}

int joint_nv(JointType type) {
  switch (type) {
    case JointType::kSpherical:
    case JointType::kPlanar:
      return 3;
    case JointType::kFreeFlyer:
      return 6;
    case JointType::kFixed:
      return 0;
    default:
      return 1;
  }
}

Transform joint_transform(const Joint& joint, const double* q) {
  Transform out;
  compose_joint_transform(Transform::Identity(), joint, q, out);
  return out;
}

Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6> joint_subspace_matrix(const Joint& joint) {
  Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6> s =
      Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6>::Zero(6, joint.nv);
  double unit[6];
  for (int k = 0; k < joint.nv; ++k) {
    std::fill(unit, unit + 6, 0.0);
    unit[k] = 1.0;
    s.col(k) = joint_motion(joint, unit).to_vector();
  }
  return s;
}

}  // namespace torqued
