// The discrete steps of a trajectory optimizer, x⁺ = f(x, u) with x = (q, q̇) and τ = B u, by
// the integrators Crocoddyl's IntegratedActionModels use (Mastalli et al. 2020, "Crocoddyl: An
// Efficient and Versatile Framework for Multi-Contact Optimal Control", ICRA, §IV):
//   semi-implicit Euler:  q̈ = FD(q, q̇, τ),  v⁺ = q̇ + dt q̈,  q⁺ = q ⊕ dt v⁺
//   explicit Euler:       q̈ = FD(q, q̇, τ),  v⁺ = q̇ + dt q̈,  q⁺ = q ⊕ dt q̇
//   RK4:                  k₁ = f(x), k₂ = f(x ⊕ dt/2 k₁), k₃ = f(x ⊕ dt/2 k₂), k₄ = f(x ⊕ dt k₃),
//                         x⁺ = x ⊕ dt/6 (k₁ + 2 k₂ + 2 k₃ + k₄)
// FD is ABA, or the constrained dynamics when the model's loop closures or the step's constraints
// (rigid contacts; with Baumgarte's `gains` when given, else held at the acceleration level as
// Crocoddyl's contact dynamics holds them) hold the robot. discrete_step() takes the
// step alone, as a shooting solver's forward pass does; euler_step_derivatives.hpp and
// runge_kutta_step_derivatives.hpp take it with its Jacobians. This header also holds what they
// share: the outputs in the tangent space, the torques of the controls, and the joint-by-joint
// products with the block-diagonal Jacobians of q ⊕ w.
#pragma once

#include <span>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/model/data.hpp"

namespace torqued {

enum class Integrator { kSemiImplicitEuler, kExplicitEuler, kRungeKutta4 };

// What discrete_step() binds in Data.
inline constexpr WorkspaceSet kDiscreteStepWorkspaces =
    kAbaWorkspaces | kConstrainedDynamicsWorkspaces |
    WorkspaceSet::of<DiscreteStepWorkspace, RungeKuttaWorkspace>();

// x⁺ = f(x, u) by `integrator` into q_next (nq) and v_next (nv), τ = B u as actuate() makes it.
// Under constraints (the model's loop closures, then `constraints`), λ at the knot (RK4: its first
// stage) goes into `multipliers` when it has their rows (constraint_rows()); pass it empty when
// λ is not wanted. Agrees with the Jacobian-taking steps' q⁺ and v⁺ to rounding. Throws
// SingularSystemError as aba() does.
void discrete_step(const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
                   const ConstVectorRef& u, double dt, Integrator integrator,
                   std::span<const int> actuated_dofs, Eigen::Ref<Eigen::VectorXd> q_next,
                   Eigen::Ref<Eigen::VectorXd> v_next,
                   std::span<const BilateralConstraint> constraints = {},
                   const BaumgarteGains& gains = {}, std::span<double> multipliers = {});

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
