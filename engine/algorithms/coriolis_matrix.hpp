// The Coriolis matrix C(q, v): C v = C(q, v) v of the equations of motion (nonlinear effects
// minus gravity) with Ṁ − 2C skew-symmetric, computed in the world frame with composite
// quantities, the approach of Pinocchio's computeCoriolisMatrix (spatial algebra of Featherstone
// 1987, ch. 2-3 and §7.2). See coriolis_matrix.cpp for the factorisation and the recurrences.
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What coriolis_matrix() binds in Data.
inline constexpr WorkspaceSet kCoriolisWorkspaces = WorkspaceSet::of<CoriolisWorkspace>();

// C(q, v) in CoriolisWorkspace::C (nv x nv). Also leaves data.oMi, data.ov (world-frame body
// velocities), data.oS (world-frame joint columns) and CoriolisWorkspace::odS (their time
// derivatives) current.
const Eigen::MatrixXd& coriolis_matrix(const Model& model, Data& data, const ConstVectorRef& q,
                                       const ConstVectorRef& v);

}  // namespace torqued
