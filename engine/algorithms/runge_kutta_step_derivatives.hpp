// The classical fourth-order Runge-Kutta step of forward dynamics and its Jacobians in the tangent
// space, as Crocoddyl's IntegratedActionModelRK (RK4, controls held over the step) computes them
// (Mastalli et al. 2020, "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact
// Optimal Control", ICRA; Mastalli et al. 2022, "A Feasibility-Driven Approach to Control-Limited
// DDP", Autonomous Robots, §V for the integrators). With x = (q, q̇), f(x, u) = (q̇, FD(q, q̇, B u))
// and ⊕ integrating q on its joints' groups and adding q̇:
//   k₁ = f(x, u)   k₂ = f(x ⊕ dt/2 k₁, u)   k₃ = f(x ⊕ dt/2 k₂, u)   k₄ = f(x ⊕ dt k₃, u)
//   x⁺ = x ⊕ dt/6 (k₁ + 2 k₂ + 2 k₃ + k₄)
// The Jacobians follow the stages by the chain rule (Kim 2012, §1 for the tangent space): with
// y_i = x ⊕ h_i k_{i−1} and J_x, J_w the Jacobians of x ⊕ w (block diagonal in q, the identity in
// q̇; integrate_jacobians()),
//   ∂y_i/∂x = J_x + h_i J_w ∂k_{i−1}/∂x        ∂y_i/∂u = h_i J_w ∂k_{i−1}/∂u
//   ∂k_i/∂x = [0 I; ∂q̈/∂q ∂q̈/∂q̇] ∂y_i/∂x     ∂k_i/∂u = [0 I; ∂q̈/∂q ∂q̈/∂q̇] ∂y_i/∂u + [0; ∂q̈/∂τ B]
//   ∂x⁺/∂x = J_x + dt J_w Σ b_i ∂k_i/∂x        ∂x⁺/∂u = dt J_w Σ b_i ∂k_i/∂u
// each ∂q̈ the forward-dynamics derivatives at the stage (forward_dynamics_derivatives(): ABA's, or
// under the constraints the constrained dynamics'): four of them per step, and four products of nv
// x nv by nv x (2 nv + nu) matrices beside them.
#pragma once

#include <span>

#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/discrete_step.hpp"

namespace torqued {

inline constexpr WorkspaceSet kRungeKuttaStepWorkspaces =
    kConstrainedDynamicsDerivativesWorkspaces |
    WorkspaceSet::of<DiscreteStepWorkspace, RungeKuttaWorkspace>();

// One RK4 step from (q, q̇) under controls u held over dt, τ = B u as in euler_step_derivatives(),
// the robot held by the model's loop closures and `constraints` (rigid contacts, with Baumgarte's
// `gains`; none by default). Leaves the last stage's forward_dynamics_derivatives() results in
// data. Throws SingularSystemError as aba() does.
void runge_kutta_step_derivatives(const Model& model, Data& data, const ConstVectorRef& q,
                                  const ConstVectorRef& v, const ConstVectorRef& u, double dt,
                                  std::span<const int> actuated_dofs, DiscreteStepOutput out,
                                  std::span<const BilateralConstraint> constraints = {},
                                  const BaumgarteGains& gains = {});

}  // namespace torqued
