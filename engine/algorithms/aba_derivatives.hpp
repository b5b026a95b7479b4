// Analytic derivatives of forward dynamics (Carpentier & Mansard 2018, "Analytical Derivatives of
// Rigid Body Dynamics Algorithms", RSS, §V).
#pragma once

#include <span>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"

namespace torqued {

// What aba_derivatives() binds in Data: ABA's, M⁻¹'s, the RNEA derivatives' (with CRBA's) and
// its own workspaces.
inline constexpr WorkspaceSet kAbaDerivativesWorkspaces =
    kAbaWorkspaces | kMinverseWorkspaces | kRneaDerivativesWorkspaces |
    WorkspaceSet::of<AbaDerivativesWorkspace>();

// The partial derivatives of q̈ = aba(q, q̇, τ, f_ext) at the given state, in the returned
// workspace (the AbaDerivativesWorkspace):
//   ddq_dq:   ∂q̈/∂q in the tangent space (column k = d/dε q̈(q ⊕ ε e_k));
//   ddq_dv:   ∂q̈/∂q̇;
//   ddq_dtau: ∂q̈/∂τ = M⁻¹, full and symmetric;
// with q̈ itself in data.ddq. Also leaves the RNEA derivatives at (q, q̇, q̈) in the
// RneaDerivativesWorkspace and M in MassMatrixWorkspace::M. Throws SingularSystemError as aba()
// does.
const AbaDerivativesWorkspace& aba_derivatives(const Model& model, Data& data,
                                               const ConstVectorRef& q, const ConstVectorRef& v,
                                               const ConstVectorRef& tau,
                                               std::span<const Force> external_forces = {});

}  // namespace torqued
