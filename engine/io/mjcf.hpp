// Reading MuJoCo models (MJCF, parsed with TinyXML 2.6 behind the checks of xml_guard.hpp) into a
// ModelSpec, with the semantics of MuJoCo's compiler for what decides the rigid-body dynamics.
//
// Read: the <body> tree of <worldbody> in document order (ModelSpec::children_in_given_order: q and
// v follow the file, as in MuJoCo and Pinocchio); <frame> elements, whose placement and childclass
// apply to what they hold; <default> classes (nested ones inherit their parent's values, a body's
// or frame's childclass sets the class of what it holds, an element's class overrides it);
// <compiler angle eulerseq inertiafromgeom inertiagrouprange> (angles are in degrees unless
// angle="radian", as in MuJoCo); <option gravity> and its gravity flag; <inertial>; joints
// (hinge: revolute, its range, when limited="true" or given under limited="auto", the limits;
// slide: prismatic; ball: spherical; free: see below); <equality> connect and weld between
// bodies, which become loop closures as MuJoCo defines them (the anchors hold at the model's
// reference configuration); and the primitive geoms of bodies whose inertia MuJoCo infers from
// geoms (inertiafromgeom="true", or "auto" and no <inertial>), with MuJoCo's formulas for
// spheres, capsules, cylinders, ellipsoids and boxes (size, fromto, density, default 1000, or
// mass), restricted to the geoms whose group is within inertiagrouprange.
//
// Conventions:
// - Orientations: quat is w x y z, normalized; euler follows eulerseq, lowercase letters about
//   the axes of the moving frame, uppercase about the fixed ones; axisangle; xyaxes; zaxis is the
//   shortest rotation from +z (a rotation of π about x for -z, as MuJoCo). An element's own
//   orientation replaces its class's; two orientations on one element are refused.
// - Joints: MuJoCo places a joint at `pos` in its body with the body's axes and turns the body
//   about it. Here the joint frame is there (the body frame shifted to pos) and the body's link
//   frame sits at -pos in it (JointSpec::child_link_placement): bodies and links are where MuJoCo
//   puts them, joint frames where Pinocchio's MJCF reader puts them. q is MuJoCo's qpos: a hinge's
//   or slide's `ref` is its value in the configuration the file describes. Velocity and effort
//   limits are infinite (MJCF has none; actuator force ranges belong to the ignored actuators).
// - A body without joints is welded to its parent (a fixed joint "<body>_fixed"); a body without
//   <inertial> or geoms has no mass. Unnamed bodies and joints are named "body<i>" and
//   "joint<i>" after MuJoCo's ids (the world is body 0, bodies count in document order, joints
//   from 0 in the order of their bodies), unnamed equality constraints "equality<i>".
// - The base: the root body is the first <body> of <worldbody>. A floating base
//   (MjcfOptions::floating_base) is the free-flyer "root_joint" at the world origin in the place
//   of the root body's free joint, whatever its name: q starts with the root body's world pose
//   (MuJoCo's free-joint qpos with w last), and the body's pos and orientation, which are only
//   MuJoCo's initial qpos, are not used; the model's world is MuJoCo's. A fixed base welds the
//   root body to the world at the origin (its pos and orientation ignored, as Pinocchio does)
//   and drops its free joint: the model's world is the root body's frame. A root body that
//   another joint (hinge, slide, ball) moves in MuJoCo's world hangs from a massless root link
//   "world", placed where the file puts it.
// - Gravity: <option gravity> (MuJoCo's default (0, 0, -9.81), none under <flag gravity=
//   "disable"/>) unless MjcfOptions::gravity says otherwise.
//
// Refused (ModelError, naming the element and its line): <include> (naming the file: no file is
// ever opened; clients inline included files), several joints in one body, a free joint other
// than on the root body, a floating base for a root body that another joint moves, a top-level
// body after the first, free joints with align="true", bodies whose inertia comes from mesh,
// sdf or hfield geoms (the files are not read), site-based connect and weld, elements that make
// bodies or joints by generation (composite, flexcomp, replicate, attach), unknown elements in
// the model tree or at the top level, compiler settings that change inertias in ways not
// implemented (boundmass, boundinertia, balanceinertia, settotalmass, alignfree, and coordinate=
// "global", which MuJoCo itself refuses), shellinertia on an inertia-giving geom, malformed
// numbers, unknown classes and keywords.
//
// Warned about (ModelSpec::warnings) and otherwise ignored: once per kind, geoms (contacts are not
// modelled), sites, cameras, lights, plugins and the sections asset (meshes, textures, materials),
// actuator, tendon, sensor, contact, visual, keyframe, extension and deformable; per joint, the
// terms MuJoCo adds to the rigid-body dynamics (armature, a rotor inertia on the diagonal of the
// mass matrix; damping, frictionloss, stiffness, springdamper) and a ball joint's range; per body,
// gravcomp; per constraint, joint and tendon equalities (the joints stay independent, as in
// ../shared/golden: panda's fingers) and inactive ones; fluid forces (<option density viscosity>).
// <size>, <statistic>, <custom>, solver options and visual attributes have no bearing on the
// dynamics and are ignored silently.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"

namespace torqued {

struct MjcfOptions {
  // Unset: the root body floats when the file gives it a free joint (MuJoCo's reading), else it
  // is welded. True: it floats on "root_joint" whether or not the file gives it a free joint.
  // False: it is welded at the world origin, its free joint (if any) dropped.
  std::optional<bool> floating_base = std::nullopt;
  // Unset: the file's <option gravity>.
  std::optional<Vec3> gravity = std::nullopt;
  // Refuse, before the document is parsed, one with more <body> elements than this (0: no
  // limit): a caller bounding the model's size need not wait for a huge tree to be built.
  std::size_t max_bodies = 0;
};

// MJCF nests bodies: a chain of n bodies is n + 3 levels deep (mujoco, worldbody, a geom in the
// last body). TinyXML's parser descends one level per call (about 200 bytes of stack: 1,000
// levels parse in a 256 KiB stack, 2,000 do not), so this depth, enough for a chain of 1,024
// bodies (the server's default --max-bodies; a root body on a hinge or slide joint adds a world
// link, so such a chain admits 1,023), needs at most some 250 KiB of stack.
inline constexpr int kMaxMjcfDepth = 1100;
// TinyXML's parse cannot be interrupted, so its input is bounded instead, by the caps that bound
// it for URDF (urdf.hpp): the costs are TinyXML's. Real models are far below them: menagerie's go2
// and panda (../shared/models/mjcf) have at most 7 attributes on an element, 500 in all and 235
// nodes. At the caps a document reads in well under a second (mjcf_test measures the worst
// ones): a default class keeps only the attributes the reader reads, so what classes and the
// elements using them cost does not multiply.
inline constexpr std::size_t kMaxMjcfElementAttributes = kMaxUrdfElementAttributes;
inline constexpr std::size_t kMaxMjcfAttributes = kMaxUrdfAttributes;
inline constexpr std::size_t kMaxMjcfNodes = kMaxUrdfNodes;

// Throws ModelError when the XML is not MJCF the reader accepts (see above), nests deeper than
// kMaxMjcfDepth, has more attributes or nodes than the caps above, or (TooManyElementsError) more
// <body> elements than options.max_bodies. The result still has to go through build_model(),
// which does the full validation.
ModelSpec read_mjcf_string(std::string_view xml, const MjcfOptions& options = {});
// As read_mjcf_string; also throws ModelError when the file cannot be read.
ModelSpec read_mjcf_file(const std::string& path, const MjcfOptions& options = {});

}  // namespace torqued
