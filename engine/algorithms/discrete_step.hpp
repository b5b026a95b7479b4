// The discrete step of a trajectory optimizer, x⁺ = f(x, u) with x = (q, q̇) and τ = B u, and on
// request its Jacobians in the tangent space, by the integrators of Crocoddyl's
// IntegratedActionModels (Mastalli et al. 2020, "Crocoddyl: An Efficient and Versatile Framework
// for Multi-Contact Optimal Control", ICRA, §IV; Mastalli et al. 2022, "A Feasibility-Driven
// Approach to Control-Limited DDP", Autonomous Robots, §V for RK4; the tangent-space chain rule of
// Kim 2012, §1):
//   semi-implicit Euler:  q̈ = FD(q, q̇, τ),  v⁺ = q̇ + dt q̈,  q⁺ = q ⊕ dt v⁺
//   explicit Euler:       q̈ = FD(q, q̇, τ),  v⁺ = q̇ + dt q̈,  q⁺ = q ⊕ dt q̇
//   RK4:                  k₁ = f(x), k₂ = f(x ⊕ dt/2 k₁), k₃ = f(x ⊕ dt/2 k₂), k₄ = f(x ⊕ dt k₃),
//                         x⁺ = x ⊕ dt/6 (k₁ + 2 k₂ + 2 k₃ + k₄),   f(x) = (q̇, FD(q, q̇, τ))
// FD is ABA, or the constrained dynamics when the model's loop closures or the step's constraints
// (rigid contacts; with Baumgarte's gains when given, else held at the acceleration level as
// Crocoddyl's contact dynamics holds them) hold the robot; its derivatives are aba_derivatives()'
// or constrained_dynamics_derivatives()' (forward_dynamics_derivatives()). With J_q and J_w the
// Jacobians of q ⊕ w (block diagonal: integrate_jacobians()):
//   Euler:  ∂v⁺/∂q = dt ∂q̈/∂q     ∂v⁺/∂q̇ = I + dt ∂q̈/∂q̇     ∂v⁺/∂u = dt ∂q̈/∂τ B
//     semi-implicit, at w = dt v⁺:  ∂q⁺/∂q = J_q + dt J_w ∂v⁺/∂q   ∂q⁺/∂(q̇, u) = dt J_w ∂v⁺/∂(q̇, u)
//     explicit, at w = dt q̇:        ∂q⁺/∂q = J_q   ∂q⁺/∂q̇ = dt J_w   ∂q⁺/∂u = 0
//   RK4, with y_i = x ⊕ h_i k_{i−1} and J_x, J_w those of x ⊕ w (the identity in q̇):
//     ∂y_i/∂x = J_x + h_i J_w ∂k_{i−1}/∂x        ∂y_i/∂u = h_i J_w ∂k_{i−1}/∂u
//     ∂k_i/∂x = [0 I; ∂q̈/∂q ∂q̈/∂q̇] ∂y_i/∂x     ∂k_i/∂u = [0 I; ∂q̈/∂q ∂q̈/∂q̇] ∂y_i/∂u + [0; ∂q̈/∂τ B]
//     ∂x⁺/∂x = J_x + dt J_w Σ b_i ∂k_i/∂x        ∂x⁺/∂u = dt J_w Σ b_i ∂k_i/∂u
// At a touchdown the step first applies the impact of impulse_dynamics.hpp under the contacts of
// the phase it begins (`constraints`), and takes the step above from (q, v⁺): Crocoddyl's impulse
// model and the action model after it, in one knot. Its Jacobians chain the impact's:
//   ∂x⁺/∂q = F_q + F_q̇ ∂v⁺/∂q,    ∂x⁺/∂q̇ = F_q̇ ∂v⁺/∂v⁻,    ∂x⁺/∂u = F_u,
// F the step's Jacobians at (q, v⁺) (impulse_dynamics_derivatives.hpp).
// J_q and J_w being block diagonal, the q⁺ rows cost a 6 x 6 or 3 x 3 product per multi-DOF joint
// and a copy per 1-DOF joint; an Euler step costs little beyond its dynamics derivatives, an RK4
// step four of them and four products of nv x nv by nv x (2 nv + nu) matrices. The step without
// its Jacobians follows the step with them operation by operation, so that a forward pass and a
// linearization of the same knots see the same states.
#pragma once

#include <span>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/friction_cone.hpp"
#include "engine/algorithms/impulse_dynamics_derivatives.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/model/data.hpp"

namespace torqued {

enum class Integrator { kSemiImplicitEuler, kExplicitEuler, kRungeKutta4 };

// What step() binds in Data, with or without the Jacobians.
inline constexpr WorkspaceSet kStepWorkspaces =
    kAbaWorkspaces | kConstrainedDynamicsWorkspaces | kConstrainedDynamicsDerivativesWorkspaces |
    kImpulseDynamicsDerivativesWorkspaces |
    WorkspaceSet::of<DiscreteStepWorkspace, RungeKuttaWorkspace>();

// How a step is taken: over dt by `integrator`, control c driving the DOF actuated_dofs[c] (B's
// columns are those of the identity; the other DOFs get no torque), the robot held by the model's
// loop closures and then `constraints` (rigid contacts, with Baumgarte's `gains`; none by default,
// as Crocoddyl's contact dynamics holds them). With `touchdown`, the knot begins a phase whose
// contacts are `constraints`: the impact with `restitution` (0: plastic) comes first.
struct StepSettings {
  double dt = 0.0;
  Integrator integrator = Integrator::kSemiImplicitEuler;
  std::span<const int> actuated_dofs = {};
  std::span<const BilateralConstraint> constraints = {};
  BaumgarteGains gains = {};
  bool touchdown = false;
  double restitution = 0.0;
  // The cone of each of `constraints` (points or welds), when StepOutput::friction_cones asks.
  FrictionCone friction_cone = {};
};

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMajorMatrixRef = Eigen::Ref<RowMajorMatrix>;

// The continuous dynamics at the knot, each row-major: ∂q̈/∂q, ∂q̈/∂q̇ and ∂q̈/∂τ (nv x nv), and
// under constraints ∂λ/∂q, ∂λ/∂q̇ and ∂λ/∂τ (constraint rows x nv; empty without them).
struct KnotDerivatives {
  std::span<double> da_dq, da_dv, da_dtau;
  std::span<double> dlambda_dq, dlambda_dv, dlambda_dtau;
};

// Where a step writes (matrices row-major, as the wire carries them). The state x = (q, q̇) has
// 2 nv tangent coordinates: δq (q ⊕ δq) first, then δq̇. What is not wanted is left empty.
struct StepOutput {
  Eigen::Ref<Eigen::VectorXd> q_next;  // nq
  Eigen::Ref<Eigen::VectorXd> v_next;  // nv
  // ∂x⁺/∂x (2 nv x 2 nv) and ∂x⁺/∂u (2 nv x nu). Or only their v⁺ rows (nv x 2 nv, nv x nu;
  // Euler steps, semi-implicit at a touchdown), which leaves the q⁺ rows to the caller, who has
  // what they follow from in the blocks of J_q and J_w (integrate_dq and integrate_dw). No rows:
  // the step without Jacobians.
  RowMajorMatrixRef fx = Eigen::Map<RowMajorMatrix>(nullptr, 0, 0);
  RowMajorMatrixRef fu = Eigen::Map<RowMajorMatrix>(nullptr, 0, 0);
  // λ at the knot (RK4: its first stage, the knot itself), constraint_rows() values.
  std::span<double> multipliers = {};
  // At a touchdown, the impact's impulses Λ, constraint_rows() values.
  std::span<double> impulses = {};
  // The friction-cone residuals of λ at the knot (friction_cone.hpp), constraints x
  // friction_cone_values() values; with the Jacobians, on request, their derivatives along x and u
  // (constraints friction_cone_values() x 2 nv and x nu, row-major), a touchdown's impact chained.
  std::span<double> friction_cones = {};
  std::span<double> dfriction_cones_dx = {};
  std::span<double> dfriction_cones_du = {};
  // With the v⁺ rows alone: the blocks of J_q and J_w that are not 1, those of the joints with
  // several DOFs in joint order, each row-major (integration_block_values() each).
  std::span<double> integrate_dq = {};
  std::span<double> integrate_dw = {};
  // With the Jacobians: the continuous dynamics' derivatives at the knot (after a touchdown's
  // impact, at (q, v⁺)).
  const KnotDerivatives* knot_derivatives = nullptr;
};

// One step from (q, q̇) under controls u (actuated_dofs.size() values), as `settings` say, into
// `out`. Leaves the last stage's dynamics in data (q̈ in data.ddq; with the Jacobians,
// forward_dynamics_derivatives()'s workspaces) and a touchdown's impact in the
// ImpulseDerivativesWorkspace (v⁺, Λ; with the Jacobians, their derivatives). Throws
// SingularSystemError as aba() does.
void step(const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
          const ConstVectorRef& u, const StepSettings& settings, StepOutput out);

// Whether step() under `settings` leaves the knot's world placements in data: data.oMi and
// data.oS at q, as place_in_world() writes them for every body. So do the Euler steps on a free
// tree (no constraints, loop closures or touchdown), whose one stage is aba() or aba_derivatives()
// at q; a caller that needs the bodies placed at the knot need not place them again.
bool step_leaves_knot_placements(const Model& model, const StepSettings& settings);

// The values of the blocks of J_q and J_w that are not 1, those of the joints with several DOFs:
// Σ dofs² over those joints.
std::size_t integration_block_values(const Model& model);

// τ = B u: control c drives the DOF actuated_dofs[c], the other DOFs get no torque.
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
