// Forward dynamics by a chosen algorithm, or by the one measured fastest for the model.
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

enum class ForwardDynamicsAlgorithm {
  kAba,            // articulated-body algorithm, aba.hpp: O(n)
  kCrba,           // CRBA + sparse LᵀDL, forward_dynamics_crba.hpp: O(n·depth + Σ depth²)
  kFactorization,  // innovations factorization, forward_dynamics_factorization.hpp: O(n)
  kAuto,           // the fastest of the above for this model (see forward_dynamics.cpp)
};

// The algorithm kAuto picks for `model`.
ForwardDynamicsAlgorithm auto_forward_dynamics_algorithm(const Model& model);

// What forward_dynamics() binds in Data with `algorithm` for `model`.
WorkspaceSet forward_dynamics_workspaces(const Model& model, ForwardDynamicsAlgorithm algorithm);

// q̈ = M⁻¹ (τ − C q̇ − g) in data.ddq. Every algorithm gives the same result to rounding.
const Eigen::VectorXd& forward_dynamics(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& tau,
    ForwardDynamicsAlgorithm algorithm = ForwardDynamicsAlgorithm::kAuto);

}  // namespace torqued
