// Analytic derivatives of forward dynamics under bilateral constraints, the rigid contacts and
// loop closures of constrained_dynamics.hpp (Carpentier & Mansard 2018, "Analytical Derivatives
// of Rigid Body Dynamics Algorithms", RSS, §V, extended to the constrained system as Pinocchio's
// computeConstraintDynamicsDerivatives does; Featherstone 2008, §8.1 for the system). The
// dynamics and the constraint at the acceleration level,
//   ID(q, q̇, q̈, λ) = M q̈ + C − Kᵀ λ = τ,    c(q, q̇, q̈) = K q̈ + γ + K_d ν + K_p e = 0,
// differentiated along any x of q, q̇ or τ (ID_x with λ held as forces on the bodies, c_x at
// fixed q̈) give
//   M ∂q̈ − Kᵀ ∂λ = ∂τ − ID_x,    K ∂q̈ = −c_x,
// whose solution with the free derivatives Y_x = −M⁻¹ ID_x (ABA's), G = M⁻¹ Kᵀ and the
// operational-space inertia Λ = (K M⁻¹ Kᵀ)⁺ is
//   ∂λ/∂x = −Λ (K Y_x + c_x),   ∂q̈/∂x = Y_x + G ∂λ/∂x,
//   ∂λ/∂τ = −Λ Gᵀ,              ∂q̈/∂τ = M⁻¹ − G Λ Gᵀ.
// ID_x is the RNEA derivatives at (q, q̇, q̈) with λ as external forces (rnea_derivatives.hpp),
// plus, for a constraint between two bodies, the turn of the force on body2: λ is expressed in
// frame 1 and turns with body1, where RNEA holds each force fixed in its own body. c_x comes from
// the world-frame velocity and acceleration derivatives that the RNEA derivatives leave per DOF
// (ψ, φ, χ), carried to the constraint's frame and rows. Dependent constraint rows (a planar loop
// closed by a 5D joint) take the Moore-Penrose Λ as constrained_dynamics() does.
#pragma once

#include <span>

#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/constraint_jacobian.hpp"

namespace torqued {

// What impulse_dynamics_derivatives() leaves that depends on q and the constraints alone, for the
// dynamics after a touchdown at the impact's q and contacts: M⁻¹ and P = M⁻¹ − G Λ Gᵀ, with G, Λ
// and ∂λ/∂τ in the ConstrainedDerivativesWorkspace.
struct ImpactOperationalSpace {
  const RowMatrixXd& minv;  // symmetric: rows are columns
  const Eigen::MatrixXd& inverse_inertia;
};

// What constrained_dynamics_derivatives() binds in Data: the ABA derivatives' (ABA, M⁻¹, RNEA
// derivatives, the AbaDerivativesWorkspace its results go to), the constraints' and its own.
inline constexpr WorkspaceSet kConstrainedDynamicsDerivativesWorkspaces =
    kAbaDerivativesWorkspaces |
    WorkspaceSet::of<ConstraintWorkspace, ConstrainedDerivativesWorkspace>();

// q̈ and λ of constrained_dynamics() at (q, q̇, τ) for the model's loop closures followed by
// `constraints`, and their partial derivatives: q̈ in data.ddq and ∂q̈/∂(q, q̇, τ) in the
// AbaDerivativesWorkspace (ddq_dq, ddq_dv, ddq_dtau, as aba_derivatives() leaves them without
// constraints); λ and ∂λ/∂(q, q̇, τ) (constraint_rows(model, constraints) rows) in the returned
// workspace. K and k stay in the ConstraintWorkspace. Throws SingularSystemError as aba() does,
// InconsistentConstraintsError as constrained_dynamics() does (gains.tolerance), and Interrupted
// when data.interruption asks.
// With `impact`, M⁻¹ and the constrained inverse inertia P at this q for these constraints are
// taken as a touchdown's impact has just left them (below) rather than formed a second time.
const ConstrainedDerivativesWorkspace& constrained_dynamics_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& tau, std::span<const BilateralConstraint> constraints,
    const BaumgarteGains& gains = {}, const ImpactOperationalSpace* impact = nullptr);

// The forward dynamics a discrete step differentiates: constrained_dynamics_derivatives() when
// the model has loop closures or `constraints` are given, else aba_derivatives(). Either way q̈
// is in data.ddq and its derivatives in the returned workspace.
const AbaDerivativesWorkspace& forward_dynamics_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& tau, std::span<const BilateralConstraint> constraints,
    const BaumgarteGains& gains = {}, const ImpactOperationalSpace* impact = nullptr);

}  // namespace torqued
