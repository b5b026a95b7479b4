// build_model(): validates a ModelSpec and turns its link/joint tree into Featherstone's
// parent-array form (Featherstone 1987, §7.2), merging fixed joints into the body they weld to.
//
// The traversal order is the API's promise (docs/api.md): depth-first from the root link, each
// link's child joints sorted by joint name with std::string's operator< — urdfdom keeps joints
// in a std::map and Pinocchio walks that map, so q vectors line up with Pinocchio's and with
// ../shared/golden — or, for specs with children_in_given_order, in the order of spec.joints
// (Pinocchio's SDF and MJCF order: the file's). Fixed joints are walked in place (a moving joint
// below a fixed one gets its index where the fixed joint sits in the order), which is also what
// Pinocchio's URDF parser does.
#include "engine/model/build.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string_view>

#include "engine/model/quoted.hpp"

namespace torqued {
namespace {

// Relative tolerance of the inertia checks: eigenvalues of a 3x3 come out within a few ulps of
// its largest entry, and tensors on the boundary are legitimate (a point mass has zero principal
// moments, a thin plate has A + B = C).
constexpr double kInertiaRelTol = 1e-12;
// A negative principal moment beyond that rounding is still the noise of the file's numbers, not
// a body, while it is below this fraction of the inertia the link is part of: the larger of its
// own moment about its frame origin (mass times the square of its size) and the composite
// inertia of the body it is merged into, subtree included, about that body's joint. Exporters
// print a tiny sensor link's tensor with a few digits, so that its off-diagonal entries exceed
// its diagonal, and point masses carry off-diagonal noise such as 2.4e-35; inertial data is not
// known to a millionth of what a joint moves, so a defect below that is kept (as written) with a
// warning, and a larger one is a file that is wrong at any scale.
constexpr double kNegligibleInertiaDefect = 1e-6;
// Rotations in an explicit spec may have been printed and read back: allow ~7 digits.
constexpr double kRotationTol = 1e-6;

[[noreturn]] void fail(const std::string& message) { throw ModelError(message); }

std::string format_number(double x) {
  std::ostringstream out;
  out.precision(6);
  out << x;
  return out.str();
}

bool is_finite(const Transform& t) { return t.rotation.allFinite() && t.translation.allFinite(); }

bool is_identity(const Transform& t) {
  return t.rotation == Mat3::Identity() && t.translation == Vec3::Zero();
}

bool is_rotation(const Mat3& r) {
  return (r.transpose() * r - Mat3::Identity()).cwiseAbs().maxCoeff() <= kRotationTol &&
         r.determinant() > 0.0;
}

// A quantity beyond its bound (build.hpp): fails naming it, its value and the bound.
[[noreturn]] void fail_bound(const std::string& what, double value, double bound,
                             const char* unit) {
  fail(what + " " + format_number(value) + ' ' + unit + " is out of bounds (at most " +
       format_number(bound) + ' ' + unit + " in absolute value)");
}

void check_placement(const Transform& t, const std::string& what) {
  if (!is_finite(t)) fail(what + ": origin has non-finite numbers");
  for (int i = 0; i < 3; ++i) {
    if (std::abs(t.translation(i)) > kMaxLength) {
      fail_bound(what + ": origin " + "xyz"[i], t.translation(i), kMaxLength, "m");
    }
  }
  if (!is_rotation(t.rotation)) fail(what + ": origin rotation is not a proper rotation matrix");
}

bool is_zero_inertia(const RigidInertia& y) {
  return y.mass == 0.0 && y.first_moment.isZero(0.0) && y.rotational.isZero(0.0);
}

Vec3 principal_moments(const Mat3& inertia) {
  return Eigen::SelfAdjointEigenSolver<Mat3>(inertia, Eigen::EigenvaluesOnly)
      .eigenvalues();  // ascending
}

// A link whose rotational inertia has a negative principal moment beyond rounding: judged once
// the model is built, against the inertia the link joins (see kNegligibleInertiaDefect).
struct InertiaDefect {
  int link = -1;
  double smallest_moment = 0.0;
};

// Checks what one link's inertial data means at any scale (finite, non-negative mass, a
// symmetric tensor); returns a warning (empty if none) for physically impossible but accepted
// tensors (see ../shared/models/README.md: real robots ship them), and records in `defect` a
// tensor that is not positive semi-definite.
std::string check_link_inertia(const LinkSpec& link, InertiaDefect& defect) {
  const std::string what = "link " + quoted(link.name);
  const InertialSpec& in = link.inertial;
  if (!std::isfinite(in.mass)) fail(what + ": non-finite mass");
  if (in.mass < 0.0) fail(what + ": negative mass " + format_number(in.mass));
  if (in.mass > kMaxMass) fail_bound(what + ": mass", in.mass, kMaxMass, "kg");
  check_placement(in.origin, what + " inertial");
  const Mat3& inertia = in.inertia;
  if (!inertia.allFinite()) fail(what + ": rotational inertia has non-finite numbers");
  const double scale = inertia.cwiseAbs().maxCoeff();
  if (scale > kMaxRotationalInertia) {
    fail_bound(what + ": rotational inertia entry", scale, kMaxRotationalInertia, "kg m^2");
  }
  if ((inertia - inertia.transpose()).cwiseAbs().maxCoeff() > kInertiaRelTol * scale) {
    fail(what + ": rotational inertia is not symmetric");
  }
  if (scale == 0.0) return {};
  const Vec3 moments = principal_moments(inertia);
  if (moments(0) < -kInertiaRelTol * scale) {
    defect.smallest_moment = moments(0);
    return {};
  }
  if (moments(0) + moments(1) < moments(2) * (1.0 - kInertiaRelTol)) {
    return what + ": principal moments of inertia (" + format_number(moments(0)) + ", " +
           format_number(moments(1)) + ", " + format_number(moments(2)) +
           ") violate the triangle inequality A + B >= C";
  }
  return {};
}

bool is_one_dof(JointType type) {
  return type == JointType::kRevolute || type == JointType::kContinuous ||
         type == JointType::kPrismatic || type == JointType::kHelical;
}

void check_joint(const JointSpec& joint) {
  const std::string what = "joint " + quoted(joint.name);
  check_placement(joint.origin, what);
  check_placement(joint.child_link_placement, what + ": child link placement");
  if (!std::isfinite(joint.pitch)) fail(what + ": non-finite pitch");
  if (std::abs(joint.pitch) > kMaxLength) {
    fail_bound(what + ": pitch", joint.pitch, kMaxLength, "m/rad");
  }
  const JointLimits& l = joint.limits;
  if (std::isnan(l.lower) || std::isnan(l.upper) || std::isnan(l.velocity) ||
      std::isnan(l.effort)) {
    fail(what + ": limits contain NaN");
  }
  if (!is_one_dof(joint.type)) return;
  if (!joint.axis.allFinite() || joint.axis.isZero(0.0)) fail(what + ": zero axis");
  // Normalizing divides by the length from its square, which must neither overflow (an axis of
  // 1e200 would become zero) nor underflow (one of 1e-170 would lose its digits).
  if (!std::isnormal(joint.axis.squaredNorm())) {
    fail(what + ": axis of length " + format_number(joint.axis.stableNorm()) +
         " cannot be normalized");
  }
}

// Model ids hash the numbers computed here (server/model_id.cpp), so they must come out the same
// in every build. This file is compiled without floating-point contraction into FMA (CMakeLists),
// and the functions that compute those numbers are flattened: every inline function they call
// (Eigen's, Transform's, RigidInertia's) is inlined into them and so compiled the same way. Called
// out of line instead, the linker could keep any file's copy of it, one compiled with contraction.
[[gnu::flatten]] Joint make_joint(const JointSpec& spec) {
  Joint joint;
  joint.type = spec.type;
  joint.nq = joint_nq(spec.type);
  joint.nv = joint_nv(spec.type);
  joint.pitch = spec.pitch;
  if (!is_one_dof(spec.type)) return joint;
  joint.axis = spec.axis.normalized();
  if (joint.axis == Vec3::UnitX()) {
    joint.axis_kind = AxisKind::kX;
  } else if (joint.axis == Vec3::UnitY()) {
    joint.axis_kind = AxisKind::kY;
  } else if (joint.axis == Vec3::UnitZ()) {
    joint.axis_kind = AxisKind::kZ;
  }
  switch (spec.type) {
    case JointType::kPrismatic:
      joint.subspace = {joint.axis, Vec3::Zero()};
      break;
    case JointType::kHelical:
      joint.subspace = {spec.pitch * joint.axis, joint.axis};
      break;
    default:
      joint.subspace = {Vec3::Zero(), joint.axis};
      break;
  }
  return joint;
}

[[gnu::flatten]] RigidInertia link_inertia(const LinkSpec& link) {
  const InertialSpec& in = link.inertial;
  const Mat3& r = in.origin.rotation;
  return RigidInertia::FromMassComInertia(in.mass, in.origin.translation,
                                          r * in.inertia * r.transpose());
}

[[gnu::flatten]] Transform compose(const Transform& aMb, const Transform& bMc) { return aMb * bMc; }

// A link's inertia moved into the frame of its body, where the link frame sits at bodyMlink: a
// link welded to the body, or one offset from its joint frame (JointSpec::child_link_placement).
[[gnu::flatten]] RigidInertia welded_inertia(const LinkSpec& link, const Transform& bodyMlink) {
  return link_inertia(link).transformed_by(bodyMlink);
}

// The topology of the spec, by index, once the names are known to be consistent.
struct Tree {
  std::vector<int> parent_joint;               // per link, -1 for the root
  std::vector<std::vector<int>> child_joints;  // per link, in the spec's order of children
  std::vector<int> joint_parent;               // per joint: parent link
  std::vector<int> joint_child;                // per joint: child link
  int root = -1;
};

// Follows parent joints from `start` (which cannot reach a root) until a link repeats: that link
// is on a cycle.
std::string cycle_message(const ModelSpec& spec, const Tree& tree, int start) {
  std::vector<bool> seen(spec.links.size(), false);
  int link = start;
  while (!seen[link]) {
    seen[link] = true;
    link = tree.joint_parent[tree.parent_joint[link]];
  }
  std::string joints;
  int at = link;
  do {
    const int j = tree.parent_joint[at];
    joints = quoted(spec.joints[j].name) + (joints.empty() ? "" : ", ") + joints;
    at = tree.joint_parent[j];
  } while (at != link);
  return "the joints form a cycle through link " + quoted(spec.links[link].name) + " (joints " +
         joints + ")";
}

// Names are how frames are found and how errors and layouts speak of the model, so none is empty
// (a loop closure's is checked with the closure) and, with a limit, none is longer than it.
void check_names(const ModelSpec& spec, std::size_t max_name_bytes) {
  const auto check_length = [max_name_bytes](const char* kind, const std::string& name) {
    if (max_name_bytes > 0 && name.size() > max_name_bytes) {
      throw NameTooLongError(std::string(kind) + " name " + quoted(name) + ": " +
                             std::to_string(name.size()) + " bytes exceed the limit of " +
                             std::to_string(max_name_bytes));
    }
  };
  check_length("model", spec.name);
  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    const std::string& name = spec.links[i].name;
    check_length("link", name);
    if (!name.empty()) continue;
    std::string where = "links[" + std::to_string(i) + "]";
    for (const JointSpec& joint : spec.joints) {
      if (joint.parent_link.empty() || joint.child_link.empty()) {
        where += std::string(", the ") + (joint.child_link.empty() ? "child" : "parent") +
                 " of joint " + quoted(joint.name);
        break;
      }
    }
    fail("a link has an empty name (" + where + ")");
  }
  for (std::size_t j = 0; j < spec.joints.size(); ++j) {
    const JointSpec& joint = spec.joints[j];
    check_length("joint", joint.name);
    if (joint.name.empty()) {
      fail("a joint has an empty name (joints[" + std::to_string(j) + "], from link " +
           quoted(joint.parent_link) + " to link " + quoted(joint.child_link) + ")");
    }
  }
  for (const LoopClosureSpec& loop : spec.loop_closures) check_length("loop closure", loop.name);
}

Tree make_tree(const ModelSpec& spec) {
  if (spec.links.empty()) fail("model " + quoted(spec.name) + " has no links");
  std::map<std::string_view, int> link_index;
  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    if (!link_index.emplace(spec.links[i].name, static_cast<int>(i)).second) {
      fail("duplicate link name " + quoted(spec.links[i].name));
    }
  }
  std::map<std::string_view, int> joint_index;
  for (std::size_t j = 0; j < spec.joints.size(); ++j) {
    const std::string& name = spec.joints[j].name;
    if (spec.floating_base && name == "root_joint") {
      fail("joint name 'root_joint' is reserved for the floating base");
    }
    if (!joint_index.emplace(name, static_cast<int>(j)).second) {
      fail("duplicate joint name " + quoted(name));
    }
  }

  Tree tree;
  tree.parent_joint.assign(spec.links.size(), -1);
  tree.child_joints.resize(spec.links.size());
  for (std::size_t j = 0; j < spec.joints.size(); ++j) {
    const JointSpec& joint = spec.joints[j];
    const auto parent = link_index.find(joint.parent_link);
    if (parent == link_index.end()) {
      fail("joint " + quoted(joint.name) + ": unknown parent link " + quoted(joint.parent_link));
    }
    const auto child = link_index.find(joint.child_link);
    if (child == link_index.end()) {
      fail("joint " + quoted(joint.name) + ": unknown child link " + quoted(joint.child_link));
    }
    if (parent->second == child->second) {
      fail("joint " + quoted(joint.name) + " connects link " + quoted(joint.child_link) +
           " to itself");
    }
    int& parent_joint = tree.parent_joint[child->second];
    if (parent_joint >= 0) {
      fail("link " + quoted(joint.child_link) + " is the child of two joints: " +
           quoted(spec.joints[parent_joint].name) + " and " + quoted(joint.name));
    }
    parent_joint = static_cast<int>(j);
    tree.joint_parent.push_back(parent->second);
    tree.joint_child.push_back(child->second);
    tree.child_joints[parent->second].push_back(static_cast<int>(j));
  }
  if (!spec.children_in_given_order) {
    for (std::vector<int>& children : tree.child_joints) {
      std::sort(children.begin(), children.end(),
                [&](int a, int b) { return spec.joints[a].name < spec.joints[b].name; });
    }
  }

  std::vector<std::string> roots;
  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    if (tree.parent_joint[i] < 0) {
      roots.push_back(quoted(spec.links[i].name));
      tree.root = static_cast<int>(i);
    }
  }
  if (roots.empty()) fail("no root link: " + cycle_message(spec, tree, 0));
  if (roots.size() > 1) {
    std::string names;
    for (const std::string& r : roots) names += (names.empty() ? "" : ", ") + r;
    fail("several root links: " + names);
  }
  return tree;
}

// Where each link ended up: its body and its placement in that body's frame.
struct LinkPlacement {
  int body = -1;
  Transform placement = Transform::Identity();
};

void add_body(Model& model, int parent, std::string body_name, std::string joint_name,
              const Joint& joint, const JointLimits& limits, const Transform& placement) {
  model.parent.push_back(parent);
  model.body_names.push_back(std::move(body_name));
  model.joint_names.push_back(std::move(joint_name));
  model.joints.push_back(joint);
  model.limits.push_back(limits);
  model.joint_placements.push_back(placement);
  model.inertias.push_back(RigidInertia::Zero());
}

void add_frame(Model& model, std::string name, FrameKind kind, int body,
               const Transform& placement) {
  model.frames.push_back({std::move(name), kind, body, placement});
}

// Links have unique names and joints have unique names, but a link and a joint may share one (an
// MJCF body and its joint, a URDF joint named after its child link): a bare name would then mean
// two frames at different placements. Marks such frames, so that every reference to one of them
// says its kind (Model::frame_reference), and warns once per shared name.
void mark_shared_frame_names(Model& model) {
  std::map<std::string_view, std::vector<int>> frames_by_name;
  for (int f = 0; f < static_cast<int>(model.frames.size()); ++f) {
    frames_by_name[model.frames[f].name].push_back(f);
  }
  for (const auto& [name, frames] : frames_by_name) {
    if (frames.size() < 2) continue;
    std::string references;
    for (const int f : frames) {
      model.frames[f].name_shared = true;
      if (!references.empty()) references += f == frames.back() ? " and " : ", ";
      references +=
          quoted(std::string(frame_kind_name(model.frames[f].kind)) + ':' + model.frames[f].name);
    }
    model.warnings.push_back("frame name " + quoted(name) + " is shared by " +
                             std::to_string(frames.size()) +
                             " frames: a bare name means none of them; name them " + references);
  }
}

// Indices, depths, subtree ranges and the inertia warnings, once every body is in place.
void finish(Model& model) {
  const int n = model.nbodies();
  model.depth.assign(n, 0);
  model.subtree_end.resize(n);
  for (int i = 0; i < n; ++i) model.subtree_end[i] = i + 1;
  model.subtree_end[0] = n;
  for (int i = n - 1; i > 0; --i) {
    int& end = model.subtree_end[model.parent[i]];
    end = std::max(end, model.subtree_end[i]);
  }
  model.nq = 0;
  model.nv = 0;
  model.parent_rotation_axis.assign(n, AxisKind::kGeneral);
  for (int i = 1; i < n; ++i) {
    model.depth[i] = model.depth[model.parent[i]] + 1;
    Joint& joint = model.joints[i];
    const bool turns_about_own_axis = joint.type == JointType::kRevolute ||
                                      joint.type == JointType::kContinuous ||
                                      joint.type == JointType::kHelical;
    if (turns_about_own_axis && model.joint_placements[i].rotation == Mat3::Identity()) {
      model.parent_rotation_axis[i] = joint.axis_kind;
    }
    joint.idx_q = model.nq;
    joint.idx_v = model.nv;
    model.nq += joint.nq;
    model.nv += joint.nv;
    model.body_of_v.insert(model.body_of_v.end(), joint.nv, i);
  }

  // Bottom-up (children have larger indices), so the check is linear in the number of bodies.
  std::vector<bool> subtree_has_inertia(n);
  for (int i = n - 1; i > 0; --i) {
    if (!is_zero_inertia(model.inertias[i])) subtree_has_inertia[i] = true;
    if (subtree_has_inertia[i]) subtree_has_inertia[model.parent[i]] = true;
  }
  // A massless body is only worth its own warning when the joint above it still moves inertia.
  for (int i = 1; i < n; ++i) {
    if (!subtree_has_inertia[i]) {
      model.warnings.push_back("joint " + quoted(model.joint_names[i]) +
                               " moves a subtree without inertia: forward dynamics will fail");
    } else if (is_zero_inertia(model.inertias[i])) {
      model.warnings.push_back("link " + quoted(model.body_names[i]) + " (moved by joint " +
                               quoted(model.joint_names[i]) + ") has no mass and no inertia");
    }
  }
}

// The composite inertia of each body's subtree at the neutral configuration, where every joint
// transform is the identity (the CRBA's I^c_λ += λX_i* I^c_i, Featherstone 1987, §5.3).
std::vector<RigidInertia> neutral_composite_inertias(const Model& model) {
  std::vector<RigidInertia> composite = model.inertias;
  for (int i = model.nbodies() - 1; i > 0; --i) {
    composite[model.parent[i]] += composite[i].transformed_by(model.joint_placements[i]);
  }
  return composite;
}

// Each defect becomes a warning when it is negligible (kNegligibleInertiaDefect, or rounding
// against the whole model's inertia), else a ModelError. The inertias stay as the file wrote
// them either way.
void judge_inertia_defects(const ModelSpec& spec, const std::vector<InertiaDefect>& defects,
                           const std::vector<LinkPlacement>& placed, Model& model) {
  if (defects.empty()) return;
  const std::vector<RigidInertia> composite = neutral_composite_inertias(model);
  const double whole_model = principal_moments(composite[0].rotational)(2);
  for (const InertiaDefect& defect : defects) {
    const LinkSpec& link = spec.links[defect.link];
    const int body = placed[defect.link].body;
    const double own = principal_moments(link_inertia(link).rotational)(2);
    const double joined = principal_moments(composite[body].rotational)(2);
    const double reference = std::max(own, joined);
    const double magnitude = -defect.smallest_moment;
    const std::string what = "link " + quoted(link.name) +
                             ": rotational inertia is not positive semi-definite (principal "
                             "moment " +
                             format_number(defect.smallest_moment) + " kg m², ";
    const std::string against =
        format_number(reference) + " kg m² " +
        (body == 0 ? std::string("of the fixed base")
                   : "that joint " + quoted(model.joint_names[body]) + " moves");
    if (magnitude > kNegligibleInertiaDefect * reference &&
        magnitude > kInertiaRelTol * whole_model) {
      fail(what + "against the " + against + ")");
    }
    model.warnings.push_back(what + "negligible against the " + against + "): kept as written");
  }
}

// Loop closures reference links by name; in the Model they are on bodies, with the placement of a
// merged (fixed-joint) link folded into the constraint frame's placement.
void add_loop_closures(const ModelSpec& spec, const std::vector<LinkPlacement>& placed,
                       Model& model) {
  std::map<std::string_view, int> link_index;
  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    link_index.emplace(spec.links[i].name, static_cast<int>(i));
  }
  std::map<std::string_view, int> loop_index;
  for (const LoopClosureSpec& loop : spec.loop_closures) {
    const std::string what = "loop closure " + quoted(loop.name);
    if (loop.name.empty()) fail("a loop closure has no name");
    if (!loop_index.emplace(loop.name, 0).second)
      fail("duplicate loop closure name " + quoted(loop.name));
    // The world is body 0 with the identity placement, whichever link (if any) is the base.
    const auto locate = [&](const std::string& link, bool world_allowed) -> LinkPlacement {
      const auto it = link_index.find(link);
      if (it != link_index.end()) return placed[it->second];
      if (world_allowed && (link.empty() || link == "world")) return {0, Transform::Identity()};
      fail(what + ": unknown link " + quoted(link));
    };
    const LinkPlacement first = locate(loop.link1, false);
    const LinkPlacement second = locate(loop.link2, true);
    check_placement(loop.origin1, what + " frame 1");
    check_placement(loop.origin2, what + " frame 2");
    if (loop.link1 == loop.link2)
      fail(what + " connects link " + quoted(loop.link1) + " to itself");
    if (first.body == second.body) {
      fail(what + ": links " + quoted(loop.link1) + " and " +
           quoted(loop.link2.empty() ? "world" : loop.link2) +
           " are rigidly connected, so the loop constrains nothing");
    }
    model.loop_closures.push_back({loop.name, loop.type, first.body,
                                   compose(first.placement, loop.origin1), second.body,
                                   compose(second.placement, loop.origin2)});
  }
}

}  // namespace

ModelPtr build_model(const ModelSpec& spec, const BuildOptions& options) {
  check_names(spec, options.max_name_bytes);
  if (!spec.gravity.allFinite()) fail("model " + quoted(spec.name) + ": non-finite gravity");
  for (int i = 0; i < 3; ++i) {
    if (std::abs(spec.gravity(i)) > kMaxGravity) {
      fail_bound("model " + quoted(spec.name) + ": gravity " + "xyz"[i], spec.gravity(i),
                 kMaxGravity, "m/s^2");
    }
  }
  const Tree tree = make_tree(spec);

  auto model = std::make_shared<Model>();
  model->name = spec.name;
  model->gravity = spec.gravity;
  model->floating_base = spec.floating_base;
  model->warnings = spec.warnings;
  std::vector<InertiaDefect> defects;
  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    InertiaDefect defect;
    std::string warning = check_link_inertia(spec.links[i], defect);
    if (!warning.empty()) model->warnings.push_back(std::move(warning));
    if (defect.smallest_moment < 0.0)
      defects.push_back({static_cast<int>(i), defect.smallest_moment});
  }
  for (const JointSpec& joint : spec.joints) check_joint(joint);

  const LinkSpec& root = spec.links[tree.root];
  add_body(*model, -1, spec.floating_base ? "universe" : root.name, "universe", Joint{},
           JointLimits{}, Transform::Identity());
  std::vector<LinkPlacement> placed(spec.links.size());
  if (spec.floating_base) {
    JointSpec free_flyer;
    free_flyer.type = JointType::kFreeFlyer;
    add_body(*model, 0, root.name, "root_joint", make_joint(free_flyer), JointLimits{},
             Transform::Identity());
    add_frame(*model, "root_joint", FrameKind::kJoint, 1, Transform::Identity());
  }
  placed[tree.root].body = model->nbodies() - 1;
  add_frame(*model, root.name, FrameKind::kBody, placed[tree.root].body, Transform::Identity());
  model->inertias[placed[tree.root].body] = link_inertia(root);

  // Explicit stack rather than recursion: a spec from the network may be a very deep chain.
  std::vector<int> stack(tree.child_joints[tree.root].rbegin(),
                         tree.child_joints[tree.root].rend());
  while (!stack.empty()) {
    const int j = stack.back();
    stack.pop_back();
    const JointSpec& joint = spec.joints[j];
    const LinkPlacement& from = placed[tree.joint_parent[j]];
    const int child = tree.joint_child[j];
    LinkPlacement& to = placed[child];
    const Transform placement = compose(from.placement, joint.origin);
    // The common case, a joint frame that is its child link's frame, computes nothing more, so
    // that its numbers (and model ids) stay exactly what they were before joints could differ.
    const bool link_at_joint = is_identity(joint.child_link_placement);
    if (joint.type == JointType::kFixed) {
      to.body = from.body;
      to.placement = link_at_joint ? placement : compose(placement, joint.child_link_placement);
      add_frame(*model, joint.name, FrameKind::kJoint, to.body, placement);
      add_frame(*model, joint.child_link, FrameKind::kFixedLink, to.body, to.placement);
      model->inertias[to.body] += welded_inertia(spec.links[child], to.placement);
    } else {
      add_body(*model, from.body, joint.child_link, joint.name, make_joint(joint), joint.limits,
               placement);
      to.body = model->nbodies() - 1;
      to.placement = joint.child_link_placement;
      add_frame(*model, joint.name, FrameKind::kJoint, to.body, Transform::Identity());
      add_frame(*model, joint.child_link, FrameKind::kBody, to.body, to.placement);
      model->inertias[to.body] = link_at_joint ? link_inertia(spec.links[child])
                                               : welded_inertia(spec.links[child], to.placement);
    }
    const std::vector<int>& children = tree.child_joints[child];
    stack.insert(stack.end(), children.rbegin(), children.rend());
  }

  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    if (placed[i].body < 0) {
      fail("link " + quoted(spec.links[i].name) + " is not connected to the root link " +
           quoted(root.name) + ": " + cycle_message(spec, tree, static_cast<int>(i)));
    }
  }
  mark_shared_frame_names(*model);
  add_loop_closures(spec, placed, *model);
  finish(*model);
  judge_inertia_defects(spec, defects, placed, *model);
  if (options.warnings_are_errors && !model->warnings.empty()) {
    std::string message = "strict checking: " + model->warnings.front();
    if (const std::size_t more = model->warnings.size() - 1; more > 0) {
      message +=
          " (and " + std::to_string(more) + (more == 1 ? " more warning)" : " more warnings)");
    }
    fail(message);
  }
  return model;
}

}  // namespace torqued
