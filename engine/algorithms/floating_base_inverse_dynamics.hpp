// Inverse dynamics of a floating-base robot: the joint accelerations are given and the free-flyer
// root is unactuated, so the base acceleration is an unknown (Featherstone 1987, §7.5.1).
#pragma once

#include <span>

#include "engine/algorithms/aba.hpp"

namespace torqued {

// For a model whose first joint is a free-flyer from the world carrying the whole tree
// (Model::floating_base): given q, v and the accelerations `ddq` of every joint but the root
// (the root's 6 entries of ddq are ignored), finds the base acceleration that zero base force
// produces and the joint forces that produce the given joint accelerations. Results in
// data.ddq (the root's entries filled in, [a_lin; ω̇] in the base frame as in aba()) and
// data.tau (the root's entries are 0). `external_forces` as in rnea().
// Binds kAbaWorkspaces (aba.hpp). Throws std::invalid_argument when the model has no free-flyer
// root.
void floating_base_inverse_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                    const ConstVectorRef& v, const ConstVectorRef& ddq,
                                    std::span<const Force> external_forces = {});

}  // namespace torqued
