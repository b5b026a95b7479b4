// Forward dynamics by the composite-rigid-body method: form M, factor it, solve
// (Featherstone 1987, ch. 5; Featherstone 2008, §6.5 for the sparse factorization).
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What forward_dynamics_crba() binds in Data: CRBA's and the LᵀDL's workspaces.
inline constexpr WorkspaceSet kForwardDynamicsCrbaWorkspaces =
    WorkspaceSet::of<MassMatrixWorkspace, MassFactorWorkspace>();

// q̈ = M⁻¹ (τ − C q̇ − g) in data.ddq, with M from crba() (left in MassMatrixWorkspace::M), its
// sparse LᵀDL factors in MassFactorWorkspace::ltdl and the bias from RNEA. Throws
// SingularSystemError (aba.hpp).
const Eigen::VectorXd& forward_dynamics_crba(const Model& model, Data& data,
                                             const ConstVectorRef& q, const ConstVectorRef& v,
                                             const ConstVectorRef& tau);

}  // namespace torqued
