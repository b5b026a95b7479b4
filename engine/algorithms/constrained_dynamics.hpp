// Forward dynamics under bilateral constraints (closed loops and per-call constraints):
//   M q̈ = τ − C + Kᵀ λ,   K q̈ = k
// solved in the range space (Featherstone 2008, §8.1, eqs 8.6-8.8; Rodriguez & Kreutz 1988,
// Part II §4, the general CCFD algorithm): the free accelerations q̈₀ = M⁻¹ (τ − C), the
// operational-space inverse inertia Λ⁻¹ = K M⁻¹ Kᵀ, the multipliers Λ⁻¹ λ = k − K q̈₀ and the
// correction q̈ = q̈₀ + M⁻¹ Kᵀ λ. M comes from CRBA and its sparse LᵀDL factors (ltdl.hpp), so
// Λ⁻¹ = Zᵀ Z with Z = D^-1/2 L⁻ᵀ Kᵀ costs one sparse triangular solve per constraint row.
// Redundant constraints (dependent rows of K, e.g. a planar loop closed by a 5D or 6D joint,
// Featherstone 2008, §8.4) make Λ⁻¹ singular: a rank-revealing LDLᵀ (pivoted_ldlt.hpp) gives the
// Moore-Penrose λ = (K M⁻¹ Kᵀ)⁺ (k − K q̈₀): the minimum-norm multipliers (least squares when k
// is inconsistent along the dependent rows, e.g. for a velocity that violates them), and q̈ is
// unique whatever λ among the solutions is taken. Least squares leaves K q̈ ≠ k: the residual
// ‖K q̈ − k‖∞ is returned for the caller to judge (ConstraintResidual).
#pragma once

#include <span>

#include "engine/algorithms/constraint_jacobian.hpp"

namespace torqued {

// What constrained_dynamics() binds in Data: the constraint workspace, CRBA's and the LᵀDL's.
inline constexpr WorkspaceSet kConstrainedDynamicsWorkspaces =
    WorkspaceSet::of<ConstraintWorkspace, MassMatrixWorkspace, MassFactorWorkspace>();

// q̈ (nv) and λ (constraint_rows(model, constraints)) for the model's loop closures followed by
// `constraints`, with k as constraint_jacobian() defines it for `gains`; returns how far q̈ misses
// K q̈ = k (q̈₀ the free accelerations). K and k stay in ConstraintWorkspace::jacobian / bias
// (leading rows). Throws SingularSystemError (aba.hpp) when M is singular (a joint moving no
// inertia), InconsistentConstraintsError when the residual is past gains.tolerance.
ConstraintResidual constrained_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                        const ConstVectorRef& v, const ConstVectorRef& tau,
                                        std::span<const BilateralConstraint> constraints,
                                        const BaumgarteGains& gains,
                                        Eigen::Ref<Eigen::VectorXd> ddq,
                                        Eigen::Ref<Eigen::VectorXd> lambda);

// The prologue the constrained solves share: binds kConstrainedDynamicsWorkspaces, writes K and k
// (constraint_jacobian(), for `gains`) of the model's loop closures followed by `constraints` at
// (q, v) into the leading rows of ConstraintWorkspace::jacobian and bias, with the constraint
// kinematics (the bias forces rnea(q, v, 0) in data.tau); returns their rows.
int bind_constraint_system(const Model& model, Data& data, const ConstVectorRef& q,
                           const ConstVectorRef& v,
                           std::span<const BilateralConstraint> constraints,
                           const BaumgarteGains& gains);

// The range-space correction the constrained solves share, on `rows` constraint rows: with K in
// the leading rows of ConstraintWorkspace::jacobian, M's LᵀDL factors in data (ltdl_factorize()),
// a free solution x₀ in x and the right-hand side b in `lambda`, solves (K M⁻¹ Kᵀ) λ = b for the
// minimum-norm λ (into `lambda`) and adds M⁻¹ Kᵀ λ to x. Constrained dynamics solves it at the
// acceleration level (x₀ = q̈₀, b = k − K q̈₀), impulse dynamics at the velocity level.
void range_space_correction(const Model& model, Data& data, int rows, Eigen::Ref<Eigen::VectorXd> x,
                            Eigen::Ref<Eigen::VectorXd> lambda);

}  // namespace torqued
