// Composite-rigid-body algorithm for the joint-space mass matrix (Featherstone 1987, §5.3-5.5,
// §7.2 for trees).
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What crba() binds in Data.
inline constexpr WorkspaceSet kCrbaWorkspaces = WorkspaceSet::of<MassMatrixWorkspace>();

// M(q) in MassMatrixWorkspace::M, full and symmetric. Also leaves data.liMi current (not data.oMi).
const Eigen::MatrixXd& crba(const Model& model, Data& data, const ConstVectorRef& q);

}  // namespace torqued
