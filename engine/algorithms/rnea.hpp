// Recursive Newton-Euler inverse dynamics (Featherstone 1987, §4.5; Kim 2012, §2.1).
#pragma once

#include <span>

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// τ = M(q) q̈ + C(q, q̇) q̇ + g(q) − Σ J_iᵀ f_ext,i, in data.tau. `external_forces` holds one
// force per body (index 0, the world, is ignored), acting on the body, expressed in the body
// frame at its origin; empty means none.
const Eigen::VectorXd& rnea(const Model& model, Data& data, const ConstVectorRef& q,
                            const ConstVectorRef& v, const ConstVectorRef& a,
                            std::span<const Force> external_forces = {});

// C(q, q̇) q̇ + g(q) = rnea(q, q̇, 0), in data.tau.
const Eigen::VectorXd& nonlinear_effects(const Model& model, Data& data, const ConstVectorRef& q,
                                         const ConstVectorRef& v);

// g(q) = rnea(q, 0, 0), in data.tau.
const Eigen::VectorXd& generalized_gravity(const Model& model, Data& data, const ConstVectorRef& q);

}  // namespace torqued
