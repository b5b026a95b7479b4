// Model's name look-ups and neutral configuration. Linear searches: they run when a request
// names a frame or at registration, never inside an algorithm's loop.
#include "engine/model/model.hpp"

#include <algorithm>

namespace torqued {
namespace {

int index_of(const std::vector<std::string>& names, std::string_view name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

}  // namespace

int constraint_dimension(ConstraintType type) {
  switch (type) {
    case ConstraintType::kWeld:
      return 6;
    case ConstraintType::kPoint:
      return 3;
    case ConstraintType::kRevolute:
    case ConstraintType::kPrismatic:
      return 5;
  }
  return 0;
}

int Model::find_body(std::string_view name) const { return index_of(body_names, name); }

int Model::find_joint(std::string_view name) const { return index_of(joint_names, name); }

int Model::find_frame(std::string_view name) const {
  const auto it = std::find_if(frames.begin(), frames.end(),
                               [&](const Frame& frame) { return frame.name == name; });
  return it == frames.end() ? -1 : static_cast<int>(it - frames.begin());
}

Eigen::VectorXd Model::neutral_configuration() const {
  Eigen::VectorXd q = Eigen::VectorXd::Zero(nq);
  // Quaternions are stored (x, y, z, w): the identity has w = 1 in its last slot.
  for (int i = 1; i < nbodies(); ++i) {
    const Joint& joint = joints[i];
    if (joint.type == JointType::kSpherical) q[joint.idx_q + 3] = 1.0;
    if (joint.type == JointType::kFreeFlyer) q[joint.idx_q + 6] = 1.0;
  }
  return q;
}

}  // namespace torqued
