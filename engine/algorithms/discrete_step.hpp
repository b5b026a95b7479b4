// What the discrete steps of a trajectory optimizer share (euler_step_derivatives.hpp,
// runge_kutta_step_derivatives.hpp): the step's outputs in the tangent space, the torques of the
// controls, and the joint-by-joint products with the block-diagonal Jacobians of q ⊕ w.
#pragma once

#include <span>

#include "engine/algorithms/kinematics.hpp"
#include "engine/model/data.hpp"

namespace torqued {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMajorMatrixRef = Eigen::Ref<RowMajorMatrix>;

// A step's results, written where the caller says (row-major, as the wire carries them). The
// state x = (q, q̇) has 2 nv tangent coordinates: δq (q ⊕ δq) first, then δq̇.
struct DiscreteStepOutput {
  Eigen::Ref<Eigen::VectorXd> q_next;  // nq
  Eigen::Ref<Eigen::VectorXd> v_next;  // nv
  RowMajorMatrixRef fx;                // ∂x⁺/∂x, 2 nv x 2 nv
  RowMajorMatrixRef fu;                // ∂x⁺/∂u, 2 nv x nu
};

// τ = B u: control c drives the DOF actuated_dofs[c] (B's columns are those of the identity), the
// other DOFs get no torque.
inline void actuate(std::span<const int> actuated_dofs, const ConstVectorRef& u,
                    Eigen::VectorXd& tau) {
  tau.setZero();
  for (std::size_t c = 0; c < actuated_dofs.size(); ++c) {
    tau[actuated_dofs[c]] = u[static_cast<Eigen::Index>(c)];
  }
}

// Calls visit.template operator()<K>(at) for every joint with K > 0 DOFs starting at DOF `at`,
// K a compile-time 1, 3 or 6, so that the products with a block-diagonal Jacobian of q ⊕ w are
// fixed-size blocks.
template <class Visit>
void for_each_joint_block(const Model& model, Visit&& visit) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    switch (joint_nv(joint.type)) {
      case 0:
        break;
      case 3:
        visit.template operator()<3>(joint.idx_v);
        break;
      case 6:
        visit.template operator()<6>(joint.idx_v);
        break;
      default:
        visit.template operator()<1>(joint.idx_v);
        break;
    }
  }
}

}  // namespace torqued
