// The generalized gravity g(q) = rnea(q, 0, 0) and its derivative ∂g/∂q in one pass (Carpentier &
// Mansard 2018 at q̇ = q̈ = 0; Pinocchio's computeGeneralizedGravityDerivatives).
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What generalized_gravity_derivatives() binds in Data.
inline constexpr WorkspaceSet kGeneralizedGravityDerivativesWorkspaces =
    WorkspaceSet::of<RneaDerivativesWorkspace>();

// g(q) in data.tau and ∂g/∂q in the tangent space (see integrate()) in the returned workspace's
// dtau_dq, as rnea_configuration_derivatives(q, 0, 0) gives them at a fraction of its cost. Places
// every body first (data.liMi, data.oMi, data.oS). The workspace's other members are scratch.
const RneaDerivativesWorkspace& generalized_gravity_derivatives(const Model& model, Data& data,
                                                                const ConstVectorRef& q);

// The same from the placements data holds, data.oMi and data.oS at q as place_in_world() leaves
// them for every body (aba(), the RNEA derivatives, a step that says so: discrete_step.hpp), as
// Pinocchio's algorithms without q read what forwardKinematics left.
const RneaDerivativesWorkspace& placed_generalized_gravity_derivatives(const Model& model,
                                                                       Data& data);

// g(q) alone, in data.tau, from the same placements: the subtrees' masses and first moments,
// without RNEA's spatial inertias and transforms.
const Eigen::VectorXd& placed_generalized_gravity(const Model& model, Data& data);

}  // namespace torqued
