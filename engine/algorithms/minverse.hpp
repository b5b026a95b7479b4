// The inverse of the joint-space mass matrix in O(n²), without forming or factoring M
// (Rodriguez & Kreutz 1988, Part I §4; Carpentier's computeMinverse).
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

using RowMatrixXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// What minverse() binds in Data: the articulated-body core's workspace and its own.
inline constexpr WorkspaceSet kMinverseWorkspaces =
    WorkspaceSet::of<ArticulatedBodyWorkspace, MassInverseWorkspace>();

// M(q)⁻¹ in MassInverseWorkspace::Minv, full and symmetric. Also leaves data.oMi current.
// Throws SingularSystemError (aba.hpp) when a joint moves no inertia, as aba() does.
const RowMatrixXd& minverse(const Model& model, Data& data, const ConstVectorRef& q);

// The same from the factors that the Riccati pass of aba() or factorize_mass_matrix()
// (forward_dynamics_factorization.hpp) left in the ArticulatedBodyWorkspace and data.oS: the
// O(n²) sweeps alone.
const RowMatrixXd& minverse_from_factors(const Model& model, Data& data);

}  // namespace torqued
