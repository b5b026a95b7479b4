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

// ∂τ/∂q alone (dtau_dq), as above: ∂τ/∂q̇, M and τ are not written. An impact differentiates
// its inverse dynamics along q only (impulse_dynamics_derivatives.cpp).
const RneaDerivativesWorkspace& rnea_configuration_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& a, std::span<const Force> external_forces, const Vec3& gravity);

// The forward pass of the above alone, as Pinocchio's computeForwardKinematicsDerivatives: the
// bodies' world placements, velocities and accelerations (data.oMi, data.oS, data.ov,
// data.oa_gf, with −gravity at the root) and the per-DOF rates ψ, φ, χ (the workspace's dv_dq,
// da_dq, da_dv), which the constraints' residual rates read (constraint_rates.hpp), without the
// backward pass's ∂τ, M and τ.
const RneaDerivativesWorkspace& forward_kinematics_derivatives(const Model& model, Data& data,
                                                               const ConstVectorRef& q,
                                                               const ConstVectorRef& v,
                                                               const ConstVectorRef& a,
                                                               const Vec3& gravity);

}  // namespace torqued
