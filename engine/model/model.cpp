// Model's name look-ups and neutral configuration. Linear searches: they run when a request
// names a frame or at registration, never inside an algorithm's loop.
#include "engine/model/model.hpp"

#include <algorithm>
#include <optional>

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

std::string_view frame_kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kBody:
      return "body";
    case FrameKind::kFixedLink:
      return "fixed_link";
    case FrameKind::kJoint:
      return "joint";
  }
  return {};
}

std::vector<int> Model::frames_meant_by(std::string_view reference) const {
  // The kind a KIND: prefix names, if any, and the name after it.
  std::optional<FrameKind> kind;
  std::string_view qualified_name;
  if (const std::size_t colon = reference.find(':'); colon != std::string_view::npos) {
    for (const FrameKind k : {FrameKind::kBody, FrameKind::kFixedLink, FrameKind::kJoint}) {
      if (reference.substr(0, colon) == frame_kind_name(k)) kind = k;
    }
    qualified_name = reference.substr(colon + 1);
  }
  std::vector<int> meant;
  for (int f = 0; f < static_cast<int>(frames.size()); ++f) {
    const Frame& frame = frames[f];
    if (frame.name == reference || (kind == frame.kind && frame.name == qualified_name)) {
      meant.push_back(f);
    }
  }
  return meant;
}

int Model::find_frame(std::string_view reference) const {
  const std::vector<int> meant = frames_meant_by(reference);
  return meant.size() == 1 ? meant.front() : -1;
}

std::string Model::frame_reference(int frame) const {
  const Frame& f = frames[frame];
  if (!f.name_shared) return f.name;
  return std::string(frame_kind_name(f.kind)) + ':' + f.name;
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
