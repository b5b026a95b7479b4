// The velocity jump of a touchdown under bilateral contacts: Crocoddyl's impulse dynamics
// (ActionModelImpulseFwdDynamics; Mastalli et al. 2020, "Crocoddyl: An Efficient and Versatile
// Framework for Multi-Contact Optimal Control", ICRA, §IV-B), which Pinocchio computes as
// impulseDynamics: an instantaneous impact (Featherstone 2008, §11.5) that holds the model's loop
// closures and the contacts given, the configuration unchanged,
//   M (v⁺ − v⁻) = Kᵀ Λ,    K v⁺ = −e K v⁻,
// e the restitution (0: plastic, the contacts come to rest; 1: elastic). It is the range-space
// solve of constrained_dynamics.hpp at the velocity level: the free solution v⁻, the multipliers
//   (K M⁻¹ Kᵀ) Λ = −(1 + e) K v⁻,    v⁺ = v⁻ + M⁻¹ Kᵀ Λ,
// Λ the impulses (N·s; N·m·s on a weld's angular rows), minimum-norm where the rows of K are
// dependent. Unlike impact.hpp's unilateral Poisson impact, every contact holds: a contact
// schedule says which are in contact after the touchdown.
#pragma once

#include <span>

#include "engine/algorithms/constrained_dynamics.hpp"

namespace torqued {

inline constexpr WorkspaceSet kImpulseDynamicsWorkspaces = kConstrainedDynamicsWorkspaces;

// v⁺ (nv) and Λ (constraint_rows(model, contacts)) of the impulse at (q, v⁻) under the model's
// loop closures followed by `contacts`, with restitution e ≥ 0; returns how far v⁺ misses
// K v⁺ = −e K v⁻. K stays in ConstraintWorkspace::jacobian (leading rows). Throws
// SingularSystemError (aba.hpp) when M is singular, InconsistentConstraintsError when the residual
// is past `tolerance`.
ConstraintResidual impulse_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                    const ConstVectorRef& v_minus,
                                    std::span<const BilateralConstraint> contacts,
                                    double restitution, const ConstraintTolerance& tolerance,
                                    Eigen::Ref<Eigen::VectorXd> v_plus,
                                    Eigen::Ref<Eigen::VectorXd> impulses);

}  // namespace torqued
