// Frame Jacobians: the 6 x nv matrix J with [v; ω] of a frame = J q̇ (Featherstone 1987, §7.2:
// the columns are the motion subspaces S_j of the frame's supporting joints, carried to the frame).
// Requires data.oMi (forward_kinematics). Rows are [linear; angular]; columns of joints that do
// not support the frame are zero.
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

void frame_jacobian(const Model& model, Data& data, int frame, ReferenceFrame reference,
                    Eigen::Ref<Eigen::MatrixXd> jacobian);

}  // namespace torqued
