// Reading SDFormat models (through libsdformat 12, Debian 12's reference parser) into a ModelSpec.
//
// What is read: the <model> under <sdf> (SDF 1.4 to 1.9: libsdformat converts older versions),
// its links' <inertial> (mass, <pose> of the centre of mass and inertia axes in the link frame,
// <inertia> about the centre of mass) and its joints' type, frame, <axis> and <limit>. Nested
// models are flattened, their links and joints named with libsdformat's scoped names
// ("arm::link1"). Collisions, visuals, sensors, plugins, <frame> elements (except as the targets
// of relative_to) and namespaced extensions such as drake:... are ignored; <static> only decides
// the base (below).
//
// Conventions (Pinocchio's SDF reading, which ../shared/golden follows):
// - Frames as libsdformat's frame graph resolves them (//pose/@relative_to, SDF <= 1.6 link poses
//   in the model frame and joint poses in the child link frame, <axis><xyz> in the joint frame
//   unless expressed_in says otherwise, as <use_parent_model_frame> becomes). Each joint's origin
//   is its SDF joint frame in its parent link's frame; when the child link's frame is elsewhere,
//   JointSpec::child_link_placement places it in the joint frame, so that joint frames and link
//   frames are both the file's.
// - Order: depth-first from the root link, a link's child joints in the order of their <joint>
//   elements in the document (ModelSpec::children_in_given_order).
// - Joints: revolute and continuous (one angle), prismatic, fixed (merged into the parent body),
//   ball (spherical), screw (helical, pitch = -1 / <thread_pitch>: libsdformat's thread_pitch is
//   Gazebo's, in radians per metre with a positive value for a left-handed thread, as SDF 1.10's
//   joint.sdf documents it). A limit of magnitude >= 1e10 (SDF's default is 1e16) and a negative
//   effort or velocity limit (SDF's -1) are no limit.
// - Base: joints whose parent is the world are removed; SdfOptions::floating_base decides the
//   base, or the document when it is unset: a model floats unless it is <static> or a joint
//   attaches its root link to the world, as a simulator reads it. Fixed: the root link (the one
//   no joint moves) is the fixed base, its frame the world's (its pose in the model frame is
//   ignored); floating: a free-flyer "root_joint" moves it.
// - Loop closures: a link that is the child of several joints takes the first of them in the
//   document as its tree joint (as Pinocchio does without parent guidance); each other one becomes
//   a LoopClosureSpec named after the joint, holding the joint's frame on its child link to the
//   joint's frame on its parent link exactly as the joint does: revolute and continuous as a
//   revolute constraint and prismatic as a prismatic one (both about the frame's z axis, turned
//   onto the joint axis), ball as a point constraint, fixed as a weld. Pinocchio 3.7 instead moves
//   a copy of the link, carrying a share of its inertia, by the joint and welds the copy to the
//   link: the same constrained motion with more coordinates. The loop joint's limits and
//   <dynamics> then have no coordinate to apply to.
//
// Refused (ModelError naming the element): anything libsdformat reports as an error (its
// messages, with line numbers and element paths, are in the error) except that a link's inertia
// is physically invalid, which build_model() judges as it does for URDF; a root element other
// than <sdf> (libsdformat would read a URDF too); an <sdf> version other than MAJOR.MINOR in
// digits, which libsdformat's version parser throws on; every <include>, naming its URI, before
// libsdformat sees the document, since libsdformat would open the file (the reader opens none);
// joint types universal, revolute2 and gearbox, a screw loop joint, a screw with a zero
// thread_pitch, a revolute, continuous, prismatic or screw joint without <axis>; a joint from
// the world to a link other than the root link.
// Warned (ModelSpec::warnings, naming the joint): a moving joint's <dynamics> with non-zero
// damping, friction or spring stiffness (rigid-body terms only); the removal of a joint between
// the world and the root link that is not fixed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "engine/model/build.hpp"

namespace torqued {

struct SdfOptions {
  // true adds a free-flyer named "root_joint" between the world and the model's root link, false
  // welds the root link; unset, the document decides (above). The default is Pinocchio's reading,
  // which ../shared/golden follows; the server leaves it unset when a request does not say.
  std::optional<bool> floating_base = false;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);
  // Refuse, before libsdformat parses anything, documents with more <link> elements (in <model>
  // elements, nested ones included) than this (0: no limit).
  std::size_t max_links = 0;
};

// libsdformat parses with TinyXML2, which recurses once per level of nesting, and then walks the
// element tree recursively: the input's depth is bounded first (xml_guard.hpp). A model nests
// sdf, model, link, visual, geometry, mesh, submesh (7 levels), a few more per nested model.
inline constexpr int kMaxSdfDepth = 64;
// libsdformat's parse cannot be interrupted either, and it is slow: 0.1 s for a document with one
// link, 0.2 s for iiwa14 (8 links), 0.4 s for simple_humanoid (30 links), and then about 3.4 ms
// and 0.84 MB per link, 15 ms and 2.3 MB per nested model (sdf.cpp lists what each element
// costs). So its input is bounded more tightly than URDF's: besides the caps on nesting,
// attributes and nodes, the scan adds up the work each element costs libsdformat, in units of a
// plain element (about 0.04 ms and 5 KB), and refuses more than kMaxSdfWork; <frame> elements,
// whose cost grows with their number, are capped apart. At these caps any document is refused or
// read in about 2 s (on an idle core) and 0.35 GB at most (sdf_test times the worst ones). Real
// models are far below them: iiwa14 (322 elements) costs 3,100 units, simple_humanoid (779
// elements, at most 3 attributes on one) 8,900; a model of 300 links with a visual and a collision
// each would cost about 100,000, and is refused.
inline constexpr std::size_t kMaxSdfElementAttributes = 64;
inline constexpr std::size_t kMaxSdfAttributes = 50'000;
inline constexpr std::size_t kMaxSdfNodes = 30'000;
inline constexpr std::size_t kMaxSdfWork = 60'000;
inline constexpr std::size_t kMaxSdfFrames = 1'000;

// Throws ModelError when the XML is not an SDF model torqued can represent (see above), nests
// deeper than kMaxSdfDepth, exceeds the caps above, or has more <link> elements than
// options.max_links (TooManyElementsError, xml_guard.hpp).
// The result still has to go through build_model(), which does the full validation.
ModelSpec read_sdf_string(std::string_view xml, const SdfOptions& options = {});
// As read_sdf_string; also throws ModelError when the file cannot be read.
ModelSpec read_sdf_file(const std::string& path, const SdfOptions& options = {});

// The memory libsdformat may take to read `xml`, for a caller that budgets memory: the work the
// scan adds up (above) at kSdfBytesPerWork a unit, plus what any document costs it
// (kSdfBytesPerDocument). 0 for a document the scan refuses, which read_sdf_string() refuses
// before libsdformat sees it. Measured (bench/sdf_read_memory: the peak growth of resident memory
// while one document is read, in a process that has read one before) on Debian 12's libsdformat
// 12.3: 2.9 MB for a one-link document, then 5.4 KB a unit for chains of links and joints, with
// or without visuals and collisions (329 MB for the 220-link chain at the work bound, 57 KB of
// XML), 5.4 KB for <pose> leaves, 4.1 KB for nested models and 3.8 KB for frames. The constants
// keep 13% or more above each: 373 MB reserved for that chain. A process's first document costs
// 6.6 MB more once (libsdformat reading its description of SDF), which is not reserved.
inline constexpr std::size_t kSdfBytesPerWork = 6 << 10;
inline constexpr std::size_t kSdfBytesPerDocument = 4 << 20;
std::size_t sdf_read_bytes(std::string_view xml);

}  // namespace torqued
