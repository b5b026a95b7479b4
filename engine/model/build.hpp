// Building and validating a Model from a ModelSpec.
//
// The tree is walked depth-first from the root link with each link's child joints taken in
// order of joint name (urdfdom's and Pinocchio's order, which the API promises), or in the spec's
// order when ModelSpec::children_in_given_order says so. Fixed joints are
// merged into their parent body. Errors (ModelError, naming the joint or link at fault): negative
// or non-finite mass, a rotational inertia with a negative principal moment that is not
// negligible against the inertia the link joins (build.cpp: kNegligibleInertiaDefect), a zero
// axis, a cycle, several roots, a link used by two parents, an unknown link, duplicate names,
// empty link or joint names, names longer than BuildOptions::max_name_bytes (NameTooLongError),
// non-finite numbers, and quantities beyond the bounds below. Warnings (the model loads, its
// inertias exactly as given): negligibly indefinite inertias (point masses with off-diagonal noise,
// tiny sensor links rounded by an exporter), inertias that violate the triangle inequality,
// massless moving bodies, moving subtrees with no inertia at all, and each name that a link's frame
// and a joint's share (which a request must then qualify by kind: Model::frames_meant_by). Whether
// forward dynamics is defined is decided at compute time, where a joint that drives no inertia is a
// SingularSystemError naming it.
#pragma once

#include <cstddef>
#include <stdexcept>

#include "engine/model/spec.hpp"

namespace torqued {

// Bounds on a model's quantities, far beyond any machine and far below where the algorithms
// overflow: their largest products (a force m (a + g) times a lever arm, an inertia m c² times v²,
// summed over thousands of bodies) stay below ~1e50 for states the service accepts, against
// double's 1.8e308. Each applies to the absolute value of every number of its kind.
inline constexpr double kMaxMass = 1e12;  // kg, a link's mass
// m: every translation (joint origins, child link placements, inertial origins, loop closure
// frames), and a helical joint's pitch in m/rad.
inline constexpr double kMaxLength = 1e6;
// kg m², a rotational inertia's entries: kMaxMass kMaxLength².
inline constexpr double kMaxRotationalInertia = 1e24;
inline constexpr double kMaxGravity = 1e6;  // m/s², each component

class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A name is longer than BuildOptions::max_name_bytes.
class NameTooLongError : public ModelError {
 public:
  using ModelError::ModelError;
};

struct BuildOptions {
  // Every warning (the reader's included) is a ModelError instead: for users who want a model
  // only when nothing about it is suspicious.
  bool warnings_are_errors = false;
  // Longest name of the model, a link, a joint (so a frame) or a loop closure, in bytes (0: no
  // limit). Names travel in every layout, error message and listing of the model.
  std::size_t max_name_bytes = 0;
};

ModelPtr build_model(const ModelSpec& spec, const BuildOptions& options = {});

}  // namespace torqued
