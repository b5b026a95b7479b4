// The discrete dynamics a trajectory optimizer linearizes at every knot: an Euler step of forward
// dynamics and its Jacobians in the tangent space, as Crocoddyl's IntegratedActionModelEuler
// computes them over free forward dynamics (Mastalli et al. 2020, "Crocoddyl: An Efficient and
// Versatile Framework for Multi-Contact Optimal Control", ICRA, §IV; the tangent-space chain rule
// of Kim 2012, §1). The semi-implicit (symplectic) step, Crocoddyl's:
//   q̈ = FD(q, q̇, B u),   v⁺ = q̇ + dt q̈,   q⁺ = q ⊕ dt v⁺
//   ∂v⁺/∂q = dt ∂q̈/∂q     ∂v⁺/∂q̇ = I + dt ∂q̈/∂q̇     ∂v⁺/∂u = dt ∂q̈/∂τ B
//   ∂q⁺/∂q = J_q + dt J_w ∂v⁺/∂q     ∂q⁺/∂q̇ = dt J_w ∂v⁺/∂q̇     ∂q⁺/∂u = dt J_w ∂v⁺/∂u
// where J_q and J_w are the Jacobians of q ⊕ w at w = dt v⁺ (integrate_jacobians()). The explicit
// step moves q with the velocity at the start, q⁺ = q ⊕ dt q̇:
//   ∂q⁺/∂q = J_q     ∂q⁺/∂q̇ = dt J_w     ∂q⁺/∂u = 0,   at w = dt q̇.
// J_q and J_w are block diagonal, so that the q⁺ rows cost a 6 x 6 or 3 x 3 product per multi-DOF
// joint and a copy per 1-DOF joint, and the step little beyond the dynamics derivatives
// (aba_derivatives(), or constrained_dynamics_derivatives() when the robot is held by bilateral
// constraints: Crocoddyl's DifferentialActionModelContactFwdDynamics).
#pragma once

#include <span>

#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/discrete_step.hpp"

namespace torqued {

inline constexpr WorkspaceSet kEulerStepWorkspaces =
    kConstrainedDynamicsDerivativesWorkspaces | WorkspaceSet::of<DiscreteStepWorkspace>();

enum class EulerStep { kSemiImplicit, kExplicit };

// One step of `kind` from (q, q̇) under controls u over dt: τ = B u, where control c drives the DOF
// actuated_dofs[c] (B's columns are those of the identity) and the other DOFs get no torque; the
// robot held by the model's loop closures and `constraints` (rigid contacts, with Baumgarte's
// `gains`; none by default, as Crocoddyl's contact dynamics holds them). Leaves
// forward_dynamics_derivatives()'s results in data (q̈ in data.ddq, ∂q̈/∂(q, q̇, τ) in the
// AbaDerivativesWorkspace). Throws SingularSystemError as aba() does.
//
// out.fx and out.fu may hold only the v⁺ rows, nv x 2 nv and nv x nu: the step then writes those
// and leaves the q⁺ rows to the caller, who has what they follow from in the blocks of J_q and
// J_w (DiscreteStepWorkspace's integrate_dq and integrate_dstep; write_integration_blocks()).
void euler_step_derivatives(const Model& model, Data& data, const ConstVectorRef& q,
                            const ConstVectorRef& v, const ConstVectorRef& u, double dt,
                            EulerStep kind, std::span<const int> actuated_dofs,
                            DiscreteStepOutput out,
                            std::span<const BilateralConstraint> constraints = {},
                            const BaumgarteGains& gains = {});

// The values of the blocks of J_q and J_w that are not 1, those of the joints with several DOFs:
// Σ dofs² over those joints.
std::size_t integration_block_values(const Model& model);

// Writes the last step's blocks of J_q to dq and of J_w to dw, integration_block_values() each:
// the joints with several DOFs in joint order, each block row-major.
void write_integration_blocks(const Model& model, const Data& data, std::span<double> dq,
                              std::span<double> dw);

}  // namespace torqued
