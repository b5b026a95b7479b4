// Inverse dynamics of closed chains (Kim 2012, §3.1, eqs 56-66): the actuated (acceleration-
// given) DOFs' accelerations fix the motion, the constraints fix the passive DOFs' accelerations,
// and the actuator forces follow from M q̈ + C = τ + Kᵀ λ with the passive forces given:
//   K_p q̈_p = k − K_a q̈_a                         (passive accelerations, K_p full column rank)
//   τ_r = rnea(q, q̇, q̈)                           (the open tree's forces)
//   K_pᵀ λ = τ_r,p − τ_p                            (the passive DOFs' balance, eq. 57)
//   τ_a = τ_r,a − K_aᵀ λ                            (eq. 56)
// Exactly actuated, λ's passive balance fixes τ_a (eq. 58). Redundantly actuated (more actuators
// than the mechanism's mobility), λ = λ₀ + N s is free along N = null(K_pᵀ); this returns the
// minimum-norm actuator forces (eqs 62-64) and, among the λ giving them, the minimum-norm one:
//   λ₀ = K_p (K_pᵀ K_p)⁻¹ (τ_r,p − τ_p),   c = τ_r,a − K_aᵀ λ₀,   P = I − K_p (K_pᵀ K_p)⁻¹ K_pᵀ
//   s = (P K_a K_aᵀ P)⁺ P K_a c,   λ = λ₀ + s,   τ_a = c − K_aᵀ s.
// With every DOF actuated this is τ = τ_r − Kᵀ (K Kᵀ)⁺ K τ_r, the minimal-norm forces (eqs 65-66).
#pragma once

#include <span>

#include "engine/algorithms/constraint_jacobian.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"

namespace torqued {

// What closed_chain_inverse_dynamics() binds in Data.
inline constexpr WorkspaceSet kClosedChainInverseDynamicsWorkspaces =
    WorkspaceSet::of<ConstraintWorkspace, ClosedChainWorkspace>();

// `input` (nv entries) says which DOFs are actuated: kAcceleration = actuated, q̈_k read from
// `ddq` (it must be consistent with the constraints) and τ_k computed; kForce = passive, τ_k read
// from `tau` (0 for a free joint; springs or friction otherwise) and q̈_k computed. Writes the
// complete q̈ and τ (nv each) and λ (constraint_rows(model, constraints)) for the model's loop
// closures followed by `constraints`, k as constraint_jacobian() defines it for `gains`; feeding
// τ to constrained_dynamics() gives back q̈ and λ. Returns how far q̈ misses K q̈ = k (q̈₀: the
// given accelerations with the passive ones zero), non-negligible when the given accelerations are
// not consistent with the constraints. Throws SingularSystemError (aba.hpp) naming a passive joint
// whose acceleration the actuated DOFs and the constraints leave undetermined, and
// InconsistentConstraintsError when the residual is past gains.tolerance.
ConstraintResidual closed_chain_inverse_dynamics(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& ddq, const ConstVectorRef& tau, std::span<const DofInput> input,
    std::span<const BilateralConstraint> constraints, const BaumgarteGains& gains,
    Eigen::Ref<Eigen::VectorXd> ddq_out, Eigen::Ref<Eigen::VectorXd> tau_out,
    Eigen::Ref<Eigen::VectorXd> lambda);

}  // namespace torqued
