// Quasi-static controls: the u that holds a robot still at q, the cold start of a trajectory
// optimizer (Crocoddyl's quasiStatic of its free and contact forward dynamics). At rest
// (q̇ = q̈ = 0) the dynamics reduce to g(q) = B u + Kᵀ λ, K the constraint Jacobian of the model's
// loop closures and the contacts; [u; λ] = [B Kᵀ]⁺ g(q), the least-squares solution of least norm
// (the pseudo-inverse), of which u is kept. Without contacts, a fixed base fully actuated gets
// u = g(q); a floating base without contacts gets the u that comes nearest.
#pragma once

#include <span>

#include "engine/algorithms/constraint_jacobian.hpp"

namespace torqued {

// u (actuated_dofs.size() values) at q under the model's loop closures and `contacts`.
void quasi_static_controls(const Model& model, Data& data, const ConstVectorRef& q,
                           std::span<const int> actuated_dofs,
                           std::span<const BilateralConstraint> contacts,
                           Eigen::Ref<Eigen::VectorXd> u);

}  // namespace torqued
