// Analytic derivatives of inverse dynamics (Carpentier & Mansard 2018, "Analytical Derivatives of
// Rigid Body Dynamics Algorithms", RSS).
#pragma once

#include <span>

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What rnea_derivatives() binds in Data: its own workspace and CRBA's, for M.
inline constexpr WorkspaceSet kRneaDerivativesWorkspaces =
    WorkspaceSet::of<RneaDerivativesWorkspace, MassMatrixWorkspace>();

// The partial derivatives of τ = rnea(q, q̇, q̈, f_ext) at the given state, in the returned
// workspace (the RneaDerivativesWorkspace):
//   dtau_dq: ∂τ/∂q in the tangent space (column k = d/dε τ(q ⊕ ε e_k), see integrate());
//   dtau_dv: ∂τ/∂q̇;
// with ∂τ/∂q̈ = M(q), full and symmetric, in MassMatrixWorkspace::M and τ itself in data.tau.
// `external_forces` as in rnea(): one per body, body frame, held fixed in the body when q moves.
const RneaDerivativesWorkspace& rnea_derivatives(const Model& model, Data& data,
                                                 const ConstVectorRef& q, const ConstVectorRef& v,
                                                 const ConstVectorRef& a,
                                                 std::span<const Force> external_forces = {});

// The same under `gravity` (world frame) instead of model.gravity: impulse dynamics differentiates
// M(q) Δv − Kᵀ Λ, the inverse dynamics of an instant, where gravity does no work.
const RneaDerivativesWorkspace& rnea_derivatives(const Model& model, Data& data,
                                                 const ConstVectorRef& q, const ConstVectorRef& v,
                                                 const ConstVectorRef& a,
                                                 std::span<const Force> external_forces,
                                                 const Vec3& gravity);

}  // namespace torqued
