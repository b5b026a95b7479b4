// Forward dynamics through the innovations factorization of M (Rodriguez & Kreutz 1988, Part I
// §4-5: algorithm FD1, the Kalman filter and smoother of the mass matrix).
#pragma once

#include "engine/algorithms/aba.hpp"

namespace torqued {

// Every function here binds kAbaWorkspaces (aba.hpp): the factors live in the
// ArticulatedBodyWorkspace.

// The factors of M(q) = (I + HΦL) D (I + HΦL)ᵀ: the Riccati recursion for the articulated
// inertias, leaving D⁻¹ in ArticulatedBodyWorkspace::Dinv, the gains I^A ⁰S in
// ArticulatedBodyWorkspace::U, ⁰S in data.oS and data.oMi. Needs q only. Throws SingularSystemError
// as aba() does.
void factorize_mass_matrix(const Model& model, Data& data, const ConstVectorRef& q);

// x = M⁻¹ rhs from the factors of the last factorize_mass_matrix() (O(n) per right-hand side),
// in data.ddq.
const Eigen::VectorXd& solve_factorized(const Model& model, Data& data, const ConstVectorRef& rhs);

// q̈ = M⁻¹ (τ − C q̇ − g): the bias from RNEA, then factorize and solve (FD1). In data.ddq.
const Eigen::VectorXd& forward_dynamics_factorization(const Model& model, Data& data,
                                                      const ConstVectorRef& q,
                                                      const ConstVectorRef& v,
                                                      const ConstVectorRef& tau);

}  // namespace torqued
