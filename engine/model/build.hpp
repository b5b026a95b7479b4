// Building and validating a Model from a ModelSpec.
//
// The tree is walked depth-first from the root link with each link's child joints taken in
// order of joint name (urdfdom's and Pinocchio's order, which the API promises). Fixed joints are
// merged into their parent body. Errors (ModelError, naming the joint or link at fault): negative
// or non-finite mass, a rotational inertia that is not positive semi-definite, a zero axis, a
// cycle, several roots, a link used by two parents, an unknown link, duplicate names, non-finite
// numbers. Warnings (the model loads): inertias that violate the triangle inequality, massless
// moving bodies, and moving subtrees with no inertia at all (forward dynamics on them fails).
#pragma once

#include <stdexcept>

#include "engine/model/spec.hpp"

namespace torqued {

class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

ModelPtr build_model(const ModelSpec& spec);

}  // namespace torqued
