// URDF reader: urdfdom's parsed model (urdf::parseURDF, liburdfdom-dev 3.0.1) mapped onto a
// ModelSpec; see urdf.hpp for what is read, what is ignored and how planar joints are aligned.
//
// urdfdom reports parse errors through console_bridge (printing to stderr), and returns null for
// most of them. So that the errors reach the caller instead, they are captured while this reader
// parses (urdfdom_messages.hpp).
#include "engine/io/urdf.hpp"

#include <urdf_parser/urdf_parser.h>

#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/io/urdfdom_messages.hpp"
#include "engine/io/xml_guard.hpp"
#include "engine/model/quoted.hpp"

namespace torqued {
namespace {

// The value of an element's attribute, as written.
std::optional<std::string_view> attribute(const XmlElement& element, std::string_view name) {
  for (const auto& [key, value] : element.attributes) {
    if (key == name) return value;
  }
  return std::nullopt;
}

// urdfdom reads links and joints named "" (an empty name is no name for the engine): refused
// here, where the line is known.
void check_named(const XmlElement& element) {
  if (element.depth == 2 && (element.name == "link" || element.name == "joint") &&
      attribute(element, "name") == "") {
    throw ModelError("invalid URDF: line " + std::to_string(element.line) + ": <" +
                     std::string(element.name) + "> with an empty name");
  }
}

// urdfdom 3.0.1 links the tree it reads with shared pointers from each link to its child links,
// so joints that form a cycle (a joint from a link to itself included) leave a reference cycle
// that is never freed, whether urdfdom then rejects the document or not: tests/fuzz/urdf_fuzzer
// found every such document leaking, which a client could repeat until the server ran out of
// memory. So the joints' links are read during the structural check, and a cycle is refused
// before urdfdom sees the document. As urdfdom reads them: the first <parent> and <child> of each
// <joint> under the root, their "link" attribute; a name with an entity reference, which TinyXML
// would decode, is refused rather than decoded here.
class JointGraph {
 public:
  void add(const XmlElement& element) {
    if (element.depth == 2) {
      in_joint_ = element.name == "joint";
      if (in_joint_) joints_.push_back({attribute(element, "name").value_or(""), {}, {}});
      return;
    }
    if (element.depth != 3 || !in_joint_) return;
    JointLinks& joint = joints_.back();
    std::optional<std::string_view>* end = element.name == "parent"  ? &joint.parent
                                           : element.name == "child" ? &joint.child
                                                                     : nullptr;
    if (end == nullptr || end->has_value()) return;
    *end = attribute(element, "link");
    if (end->has_value() && (*end)->find('&') != std::string_view::npos) {
      throw ModelError("invalid URDF: joint " + quoted(joint.name) +
                       ": entity references in link names are not supported");
    }
  }

  // Throws ModelError naming the joint that closes a cycle.
  void check_acyclic() const {
    std::map<std::string_view, std::vector<const JointLinks*>> children;  // by parent link
    for (const JointLinks& joint : joints_) {
      if (joint.parent && joint.child) children[*joint.parent].push_back(&joint);
    }
    enum class Mark { kNew, kOnPath, kDone };
    std::map<std::string_view, Mark> marks;
    for (const auto& [root, unused] : children) {
      if (marks[root] != Mark::kNew) continue;
      marks[root] = Mark::kOnPath;
      std::vector<std::pair<std::string_view, std::size_t>> path{{root, 0}};  // link, next child
      while (!path.empty()) {
        const auto [link, next] = path.back();
        const auto below = children.find(link);
        if (below == children.end() || next == below->second.size()) {
          marks[link] = Mark::kDone;
          path.pop_back();
          continue;
        }
        ++path.back().second;
        const JointLinks& joint = *below->second[next];
        Mark& mark = marks[*joint.child];
        if (mark == Mark::kOnPath) {
          throw ModelError("invalid URDF: joint " + quoted(joint.name) +
                           " closes a cycle of joints through link " + quoted(*joint.child) +
                           " (the joints of a URDF form a tree)");
        }
        if (mark == Mark::kNew) {
          mark = Mark::kOnPath;
          path.emplace_back(*joint.child, 0);
        }
      }
    }
  }

 private:
  struct JointLinks {
    std::string_view name;
    std::optional<std::string_view> parent;
    std::optional<std::string_view> child;
  };

  std::vector<JointLinks> joints_;
  bool in_joint_ = false;  // the current element of depth 2 is a <joint>
};

Vec3 to_vec3(const urdf::Vector3& v) { return {v.x, v.y, v.z}; }

// The functions below that compute placements are flattened, and this file is compiled without
// contraction into FMA (CMakeLists): the numbers go into model ids, which must not depend on the
// build (see model/build.cpp).
[[gnu::flatten]] Transform to_transform(const urdf::Pose& pose) {
  const urdf::Rotation& r = pose.rotation;
  return {Eigen::Quaterniond(r.w, r.x, r.y, r.z).toRotationMatrix(), to_vec3(pose.position)};
}

// The rotation turning +z into the unit normal of a planar joint. Flattened, GCC 12 warns that
// the 2x3 SVD Eigen uses for antiparallel vectors may read an uninitialized coefficient; it
// reads only the ones it wrote. (Clang has no such warning, and -Werror refuses an unknown one.)
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
[[gnu::flatten]] Transform plane_alignment(const Vec3& unit_normal) {
  return {Eigen::Quaterniond::FromTwoVectors(Vec3::UnitZ(), unit_normal).toRotationMatrix(),
          Vec3::Zero()};
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

[[gnu::flatten]] Transform compose(const Transform& aMb, const Transform& bMc) { return aMb * bMc; }

[[gnu::flatten]] Transform compose_inverse(const Transform& bMa, const Transform& bMc) {
  return bMa.inverse() * bMc;
}

JointType to_joint_type(const urdf::Joint& joint) {
  switch (joint.type) {
    case urdf::Joint::REVOLUTE:
      return JointType::kRevolute;
    case urdf::Joint::CONTINUOUS:
      return JointType::kContinuous;
    case urdf::Joint::PRISMATIC:
      return JointType::kPrismatic;
    case urdf::Joint::FLOATING:
      return JointType::kFreeFlyer;
    case urdf::Joint::PLANAR:
      return JointType::kPlanar;
    case urdf::Joint::FIXED:
      return JointType::kFixed;
    case urdf::Joint::UNKNOWN:
      break;
  }
  throw ModelError("joint " + quoted(joint.name) + ": unknown joint type");
}

JointLimits to_limits(const urdf::Joint& joint, JointType type) {
  JointLimits limits;
  if (!joint.limits) return limits;
  if (type == JointType::kRevolute || type == JointType::kPrismatic) {
    limits.lower = joint.limits->lower;
    limits.upper = joint.limits->upper;
  }
  limits.velocity = joint.limits->velocity;
  limits.effort = joint.limits->effort;
  return limits;
}

InertialSpec to_inertial(const urdf::Link& link) {
  InertialSpec inertial;
  if (!link.inertial) return inertial;
  const urdf::Inertial& in = *link.inertial;
  inertial.mass = in.mass;
  inertial.origin = to_transform(in.origin);
  inertial.inertia << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
  return inertial;
}

std::string format_vector(const Vec3& v) {
  std::ostringstream out;
  out << "(" << v.x() << ", " << v.y() << ", " << v.z() << ")";
  return out.str();
}

void add_ignored_tag_warnings(const urdf::Joint& joint, std::vector<std::string>& warnings) {
  // On a fixed joint neither tag changes anything (talos_reduced has 12 such mimic tags).
  if (joint.type == urdf::Joint::FIXED) return;
  if (joint.mimic) {
    warnings.push_back("joint " + quoted(joint.name) + ": <mimic> of joint " +
                       quoted(joint.mimic->joint_name) +
                       " ignored: the joint is an independent degree of freedom");
  }
  if (joint.dynamics && (joint.dynamics->damping != 0.0 || joint.dynamics->friction != 0.0)) {
    std::ostringstream message;
    message << "joint " << quoted(joint.name) << ": <dynamics damping=\"" << joint.dynamics->damping
            << "\" friction=\"" << joint.dynamics->friction
            << "\"> ignored: only rigid-body terms are modelled";
    warnings.push_back(message.str());
  }
}

ModelSpec to_spec(const urdf::ModelInterface& urdf_model, const UrdfOptions& options) {
  ModelSpec spec;
  spec.name = urdf_model.getName();
  spec.floating_base = options.floating_base;
  spec.gravity = options.gravity;

  // Planar joints whose plane normal is not +z: the rotation applied to the joint frame, by child
  // link, to be undone on everything expressed in that link's frame.
  std::map<std::string, Transform> realigned_links;
  for (const auto& [name, joint] : urdf_model.joints_) {
    if (joint->type != urdf::Joint::PLANAR) continue;
    const Vec3 normal = to_vec3(joint->axis);
    if (!normal.allFinite() || normal.norm() == 0.0) {
      throw ModelError("joint " + quoted(name) + ": zero axis");
    }
    const Vec3 unit = normal.normalized();
    if (unit == Vec3::UnitZ()) continue;
    realigned_links[joint->child_link_name] = plane_alignment(unit);
    spec.warnings.push_back("joint " + quoted(name) + ": planar joint with plane normal " +
                            format_vector(normal) + ": the frame of link " +
                            quoted(joint->child_link_name) +
                            " is rotated so that its z axis is the normal");
  }
  const auto undo_alignment = [&](const std::string& link, const Transform& t) {
    const auto it = realigned_links.find(link);
    return it == realigned_links.end() ? t : compose_inverse(it->second, t);
  };

  for (const auto& [name, link] : urdf_model.links_) {
    LinkSpec out{name, to_inertial(*link)};
    out.inertial.origin = undo_alignment(name, out.inertial.origin);
    spec.links.push_back(std::move(out));
  }
  for (const auto& [name, joint] : urdf_model.joints_) {
    JointSpec out;
    out.name = name;
    out.type = to_joint_type(*joint);
    out.parent_link = joint->parent_link_name;
    out.child_link = joint->child_link_name;
    out.origin =
        undo_alignment(out.parent_link, to_transform(joint->parent_to_joint_origin_transform));
    out.axis = to_vec3(joint->axis);
    if (out.type == JointType::kPlanar) {
      const auto it = realigned_links.find(out.child_link);
      if (it != realigned_links.end()) out.origin = compose(out.origin, it->second);
      out.axis = Vec3::UnitZ();
    }
    out.limits = to_limits(*joint, out.type);
    add_ignored_tag_warnings(*joint, spec.warnings);
    spec.joints.push_back(std::move(out));
  }
  return spec;
}

}  // namespace

ModelSpec read_urdf_string(std::string_view xml, const UrdfOptions& options) {
  JointGraph joints;
  const XmlLimits limits{.max_depth = kMaxUrdfDepth,
                         .counted_element = "link",
                         .max_counted = options.max_links,
                         .max_element_attributes = kMaxUrdfElementAttributes,
                         .max_attributes = kMaxUrdfAttributes,
                         .max_nodes = kMaxUrdfNodes};
  check_xml_structure(xml, limits, [&joints](const XmlElement& element) {
    check_named(element);
    joints.add(element);
  });
  joints.check_acyclic();
  std::vector<std::string> messages;
  urdf::ModelInterfaceSharedPtr urdf_model;
  {
    CaptureUrdfdomMessages capture(messages);
    try {
      urdf_model = urdf::parseURDF(std::string(xml));
    } catch (const std::exception& e) {
      messages.push_back(e.what());
    }
  }
  // urdfdom logs some errors and still returns a model: a <mass value="inf"/> it cannot parse
  // leaves a massless link behind. Any error it reports rejects the file.
  if (!urdf_model || !messages.empty()) {
    std::string message = "invalid URDF";
    for (const std::string& m : messages) message += ": " + m;
    throw ModelError(message);
  }
  return to_spec(*urdf_model, options);
}

ModelSpec read_urdf_file(const std::string& path, const UrdfOptions& options) {
  return read_urdf_string(read_document_file(path, "URDF"), options);
}

}  // namespace torqued
