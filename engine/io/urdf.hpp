// Reading URDF robot descriptions (through urdfdom) into a ModelSpec.
//
// Only what determines the rigid-body dynamics is read: links' <inertial>, joints' type, origin,
// axis and <limit>. Visuals, collisions, meshes (package:// URIs are never opened), transmissions
// and gazebo tags are ignored. Tags that would change the dynamics but that the engine does not
// model are reported in ModelSpec::warnings, naming the joint: <mimic> on a moving joint (the
// joint stays an independent degree of freedom, as in Pinocchio and ../shared/golden) and a
// <dynamics> tag with non-zero damping or friction (rigid-body terms only) on a moving joint.
// Any error urdfdom reports rejects the file, even where urdfdom itself would carry on.
//
// Joint types: revolute, continuous (one angle, position limits ignored), prismatic, fixed,
// floating (a free-flyer) and planar. URDF gives a planar joint's plane by its normal (<axis>);
// the engine's planar joint moves in its joint frame's xy plane, so when the normal is not +z the
// joint frame is rotated by the shortest rotation taking +z to the normal, and the child link's
// inertial origin and its child joints' origins are counter-rotated so that everything beyond
// the child link is where the URDF puts it. Only the child link's own frame (and the meaning of
// the joint's x, y, θ coordinates) differ from a literal reading; a warning says so.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "engine/model/build.hpp"

namespace torqued {

struct UrdfOptions {
  // Adds a free-flyer named "root_joint" between the world and the URDF's root link.
  bool floating_base = false;
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);
  // Refuse, before urdfdom parses anything, documents with more <link> elements than this (0: no
  // limit): a caller bounding the model's size need not wait for a huge tree to be built.
  std::size_t max_links = 0;
};

// Elements nest at most this deep in a URDF (robot, link, visual, geometry, mesh is 5; gazebo
// plugin blocks add a few): urdfdom's XML parser recurses once per level (xml_guard.hpp).
inline constexpr int kMaxUrdfDepth = 64;
// urdfdom's parse cannot be interrupted, so its input is bounded instead (xml_guard.hpp): at these
// caps any document parses and builds in milliseconds (xml_guard_test measures the worst ones).
// Real robots are far below them: the bundled and shared ones have at most 6 attributes on an
// element (<inertia>) and 30 to 42 nodes and 30 to 35 attributes per link (the largest,
// talos_reduced: 60 links, 111 KB, about 2,100 nodes), so a robot of 1,024 links (--max-bodies'
// default) would need some 43,000 nodes and 36,000 attributes.
inline constexpr std::size_t kMaxUrdfElementAttributes = 64;
inline constexpr std::size_t kMaxUrdfAttributes = 200'000;
inline constexpr std::size_t kMaxUrdfNodes = 100'000;

// Throws ModelError when the XML is not a valid URDF (the message carries urdfdom's diagnostics),
// nests deeper than kMaxUrdfDepth, has more attributes or nodes than the caps above, has more
// <link> elements than options.max_links, or has joints that form a cycle (refused before urdfdom
// parses: urdfdom would leak it).
// The result still has to go through build_model(), which does the full validation.
ModelSpec read_urdf_string(std::string_view xml, const UrdfOptions& options = {});
// As read_urdf_string; also throws ModelError when the file cannot be read.
ModelSpec read_urdf_file(const std::string& path, const UrdfOptions& options = {});

}  // namespace torqued
