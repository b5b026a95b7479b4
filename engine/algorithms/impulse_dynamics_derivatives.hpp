// Analytic derivatives of the impulse dynamics of a touchdown (impulse_dynamics.hpp) with respect
// to the configuration q and the velocity before the impact v⁻: Pinocchio's
// computeImpulseDynamicsDerivatives, which Crocoddyl's impulse models differentiate with (Mastalli
// et al. 2020, §IV-B), derived as the constrained-dynamics derivatives are (Carpentier & Mansard
// 2018, §V). The impact and its constraint,
//   ID(q, Δv, Λ) = M(q) Δv − K(q)ᵀ Λ = 0,    c(q, v⁺, v⁻) = K(q) (v⁺ + e v⁻) = 0,    Δv = v⁺ − v⁻,
// differentiated along q and v⁻ give
//   M ∂v⁺ − Kᵀ ∂Λ = M ∂v⁻ − ID_q ∂q,    K ∂v⁺ = −e K ∂v⁻ − c_q ∂q,
// where ID_q is the RNEA derivative at (q, q̇ = 0, q̈ = Δv) with Λ as forces on the bodies and no
// gravity (the inverse dynamics of an instant), and c_q = ∂(K(q) w)/∂q at w = v⁺ + e v⁻, the
// acceleration-level residual's rate at (q, 0, w) without gravity or gains (constraint_rates.hpp).
// With G = M⁻¹ Kᵀ and A⁺ = (K M⁻¹ Kᵀ)⁺ (Moore-Penrose where rows are dependent):
//   ∂Λ/∂q = A⁺ (Gᵀ ID_q − c_q),     ∂v⁺/∂q = −M⁻¹ ID_q + G ∂Λ/∂q,
//   ∂Λ/∂v⁻ = −(1 + e) A⁺ K,         ∂v⁺/∂v⁻ = 1 + G ∂Λ/∂v⁻.
#pragma once

#include <span>

#include "engine/algorithms/impulse_dynamics.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"

namespace torqued {

// What impulse_dynamics_derivatives() binds in Data.
inline constexpr WorkspaceSet kImpulseDynamicsDerivativesWorkspaces =
    kImpulseDynamicsWorkspaces | kMinverseWorkspaces | kRneaDerivativesWorkspaces |
    WorkspaceSet::of<ConstrainedDerivativesWorkspace, ImpulseDerivativesWorkspace>();

// v⁺ and Λ of impulse_dynamics() at (q, v⁻) for the model's loop closures followed by `contacts`
// with restitution e ≥ 0, and their derivatives, in the returned workspace (velocity, impulses,
// dvelocity_dq, dvelocity_dv, dimpulses_dq, dimpulses_dv; constraint_rows(model, contacts) rows).
// K stays in ConstraintWorkspace::jacobian. Throws SingularSystemError as impulse_dynamics() does,
// InconsistentConstraintsError when v⁺ misses K v⁺ = −e K v⁻ past `tolerance`, and Interrupted
// when data.interruption asks.
const ImpulseDerivativesWorkspace& impulse_dynamics_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v_minus,
    std::span<const BilateralConstraint> contacts, double restitution,
    const ConstraintTolerance& tolerance = {});

}  // namespace torqued
