// The forward pass of a shooting solver: a trajectory from x₀ under controls with feedback about
// a nominal trajectory, as the DDP and iLQR forward passes take it (Mayne 1966; Li & Todorov 2004,
// "Iterative Linear Quadratic Regulator Design for Nonlinear Biological Movement Systems", §III;
// Crocoddyl's ShootingProblem::rollout and SolverDDP::forwardPass, Mastalli et al. 2020, §V):
//   u_k = ū_k + K_k (x_k ⊖ x̄_k),   x_{k+1} = f(x_k, u_k),   k = 0 … K−1
// where f is a discrete step (discrete_step.hpp) and x ⊖ x̄ = (q ⊖ q̄, q̇ − q̄̇) the tangent-space
// difference (difference(), configuration.hpp), in the coordinates of Fx's columns. Without
// feedback, u_k = ū_k. On request each step is taken with its Jacobians Fx_k = ∂x_{k+1}/∂x_k and
// Fu_k = ∂x_{k+1}/∂u_k, so that one call gives a DDP iteration's trajectory and the linearization
// its backward pass needs about it. A contact schedule, as Crocoddyl builds a locomotion problem
// (Mastalli et al. 2020, §IV-B), changes the contacts along the way: each knot is held by the
// contacts of its phase, a phase that adds a contact begins with the impact of its touchdown
// (discrete_step.hpp), and one that drops a contact lifts it off.
#pragma once

#include <span>
#include <stdexcept>
#include <string>

#include "engine/algorithms/discrete_step.hpp"

namespace torqued {

inline constexpr WorkspaceSet kRolloutWorkspaces = kStepWorkspaces;

// The nominal trajectory and gains of the feedback, each row-major: x̄_k as q̄ (K × nq) and q̄̇
// (K × nv), and K_k (K × nu × 2 nv). Empty spans: open loop.
struct RolloutFeedback {
  std::span<const double> q_nominal;
  std::span<const double> v_nominal;
  std::span<const double> gains;
};

// One phase of a contact schedule: from knot `first_knot` until the next phase's, the robot is held
// by the model's loop closures and `contacts`. When it holds a contact the phase before did not
// (the same type on the same frame of the same bodies), its first knot is a touchdown, with this
// restitution. The contacts listed in `anchored_at_start` (indices; contacts with the world) hold
// their frame where it is at the phase's first knot, or, when the phase before held the same
// contact, where that phase held it (a stance foot stays on its foothold while another lands):
// rollout() writes their placement2 then.
struct ContactPhase {
  int first_knot = 0;
  std::span<BilateralConstraint> contacts = {};
  std::span<const int> anchored_at_start = {};
  double restitution = 0.0;
};

// The contact of `previous` that is `contact` (the same type on the same frame of the same
// bodies), or null.
const BilateralConstraint* held_contact(std::span<const BilateralConstraint> previous,
                                        const BilateralConstraint& contact);

// True when `next` holds a contact that `previous` does not: a phase beginning with `next` after
// `previous` is a touchdown.
bool adds_contact(std::span<const BilateralConstraint> previous,
                  std::span<const BilateralConstraint> next);

// The constraint rows of every knot together, of the touchdown knots' impulses together, and the
// contacts of every knot together: the sizes of RolloutOutput::multipliers and impulses, and the
// friction cones' count, for `knots` steps under `phases` (none: one phase of `constraints`).
struct ScheduleRows {
  std::size_t multipliers = 0;
  std::size_t impulses = 0;
  std::size_t contacts = 0;
};
ScheduleRows schedule_rows(const Model& model, int knots,
                           std::span<const BilateralConstraint> constraints,
                           std::span<const ContactPhase> phases);

// Where a rollout of K steps writes, each row-major: the states x₀ … x_K as q ((K + 1) × nq) and
// q̇ ((K + 1) × nv), the controls applied (K × nu), and, when not empty, Fx (K × 2 nv × 2 nv), Fu
// (K × 2 nv × nu), λ at each knot (its phase's constraint rows, knot after knot; for RK4, at the
// knot itself) and the impulses of the touchdown knots (their rows, knot after knot).
struct RolloutOutput {
  std::span<double> q;
  std::span<double> v;
  std::span<double> u;
  std::span<double> fx;
  std::span<double> fu;
  std::span<double> multipliers;
  // Only the v⁺ rows of Fx and Fu (Euler integrators): fx K × nv × 2 nv and fu K × nv × nu, and
  // the blocks of J_q and J_w the q⁺ rows follow from, K × integration_block_values() each
  // (StepOutput), in integrate_dq and integrate_dw.
  bool velocity_rows = false;
  std::span<double> integrate_dq{};
  std::span<double> integrate_dw{};
  std::span<double> impulses{};
  // The friction cones of each knot's contacts (settings.friction_cone), contacts x
  // friction_cone_values() each, knot after knot, and with the Jacobians, on request, their
  // derivatives (StepOutput).
  std::span<double> friction_cones{};
  std::span<double> dfriction_cones_dx{};
  std::span<double> dfriction_cones_du{};
};

// A rollout that cannot go on: the dynamics of a step is singular, or a step leaves the state not
// finite (the controls or the feedback drove it away). `steps` were taken: x_steps is the last
// finite state.
class RolloutDiverged : public std::runtime_error {
 public:
  RolloutDiverged(int steps, const std::string& why)
      : std::runtime_error("step " + std::to_string(steps) + ": " + why), steps_(steps) {}
  int steps() const { return steps_; }

 private:
  int steps_;
};

// `knots` steps from (q0, v0) under ū = `controls` (knots × nu, row-major), with `feedback`, each
// as `settings` say; with `phases` (the first at knot 0, the others after it in order, each before
// `knots`), each knot under its phase's contacts instead of settings.constraints (then empty).
// Polls data.interruption before each step (throws Interrupted; the states past it are left as
// they were). Throws RolloutDiverged: the arrays past its steps are left as they were.
void rollout(const Model& model, Data& data, const ConstVectorRef& q0, const ConstVectorRef& v0,
             int knots, std::span<const double> controls, const StepSettings& settings,
             const RolloutFeedback& feedback, const RolloutOutput& out,
             std::span<const ContactPhase> phases = {});

}  // namespace torqued
