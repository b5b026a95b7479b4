// Articulated-body forward dynamics (Featherstone 1987, ch. 6 and §7.2-7.4; Kim 2012, §2.2).
#pragma once

#include <span>
#include <stdexcept>

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// Forward dynamics is undefined when a joint drives no inertia (e.g. a massless leaf body).
class SingularSystemError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What aba() binds in Data: the articulated-body core's workspace (articulated_body.hpp), which
// hybrid dynamics, floating-base inverse dynamics, the innovations factorization and M⁻¹ share.
inline constexpr WorkspaceSet kAbaWorkspaces = WorkspaceSet::of<ArticulatedBodyWorkspace>();

// q̈ = M⁻¹ (τ − C q̇ − g + Σ J_iᵀ f_ext,i), in data.ddq. `external_forces` as in rnea().
// Throws SingularSystemError naming the joint whose articulated inertia is singular.
const Eigen::VectorXd& aba(const Model& model, Data& data, const ConstVectorRef& q,
                           const ConstVectorRef& v, const ConstVectorRef& tau,
                           std::span<const Force> external_forces = {});

}  // namespace torqued
