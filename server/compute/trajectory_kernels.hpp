// The engine calls behind Linearize and Rollout, in the manner of dynamics_kernels.hpp: the
// request's arrays read in place, the response's preallocated arrays written, the chunk's knots
// (Linearize) or rollouts (Rollout) [begin, end) of a validated call. Both take the step as the
// plan read it (PlannedStep) and hand it to the engine's one step function (discrete_step.hpp).
#pragma once

#include <span>
#include <vector>

#include "engine/algorithms/rollout.hpp"
#include "server/compute/constraint_anchors.hpp"
#include "server/compute/workspace_pool.hpp"
#include "torqued/v1/dynamics.pb.h"

namespace torqued::server {

// Where each knot's values of one kind are in a call's array (one rollout's, for Rollout):
// knot k's at [at[k], at[k + 1]), or, when `at` is empty (every knot alike), at k × per_knot.
struct KnotOffsets {
  std::vector<std::size_t> at;
  std::size_t per_knot = 0;

  std::size_t operator[](std::size_t k) const { return at.empty() ? k * per_knot : at[k]; }
};

// What Linearize and Rollout read alike: the step, its integrator, the controls' DOFs, and the
// constraints with their gains, or a contact schedule.
struct PlannedStep {
  double dt = 0.0;
  Integrator integrator = Integrator::kSemiImplicitEuler;
  std::vector<int> actuated;
  // Those held in place are anchored at the first knot (Linearize) or x₀ (each rollout).
  CallConstraints constraints;
  BaumgarteGains gains;
  int rows = 0;  // the constraint rows, the loop closures' included
  // A contact schedule instead of `constraints` (then empty), in order from knot 0.
  std::vector<CallPhase> phases;
  // The contacts' friction cone, when the call asks for their residuals.
  bool cones = false;
  FrictionCone cone;
  // Where each knot's λ, cone residuals and touchdown impulses are (K + 1 offsets each).
  KnotOffsets multipliers_at, cones_at, impulses_at;

  // The engine's settings, under the constraints as anchored.
  StepSettings settings(std::span<const BilateralConstraint> anchored) const {
    return {.dt = dt,
            .integrator = integrator,
            .actuated_dofs = actuated,
            .constraints = anchored,
            .gains = gains,
            .friction_cone = cone};
  }
};

// Where Linearize's kernel writes: the response's arrays, null when not asked for.
struct LinearizeOutput {
  double* q_next;
  double* v_next;
  // STEP_JACOBIANS_DENSE: Fx and Fu (K × 2nv × 2nv, K × 2nv × nu); VELOCITY_ROWS: their v⁺ rows
  // (K × nv × 2nv, K × nv × nu) and the blocks of J_q and J_w (K × Σ dofs² each).
  double* fx;
  double* fu;
  double* integrate_dq;
  double* integrate_dw;
  // The continuous derivatives (K × nv × nv each).
  double* da_dq;
  double* da_dv;
  double* da_dtau;
  // λ (K × rows) and its derivatives (K × rows × nv): with continuous derivatives and rows; at
  // the offsets of PlannedStep::multipliers_at.
  double* multipliers;
  double* dmultipliers_dq;
  double* dmultipliers_dv;
  double* dmultipliers_dtau;
  // With phases, the touchdowns' impulses; with a cone, the residuals and their derivatives (× 2nv
  // and × nu), at the offsets of PlannedStep::impulses_at and cones_at.
  double* impulses;
  double* friction_cones;
  double* dfriction_cones_dx;
  double* dfriction_cones_du;
};

// The knots [begin, end): each its step and Jacobians, the constraints anchored at the call's
// first knot, or each under its phase's contacts (anchored_schedule()). `velocity_rows`: only the
// v⁺ rows of Fx and Fu, and the integration blocks.
void linearize(const Model& model, ModelWorkspace& ws, const v1::LinearizeRequest& request,
               const PlannedStep& step, bool velocity_rows, int begin, int end,
               const LinearizeOutput& out);

// Where Rollout's kernel writes: the response's arrays, all rollouts; empty when not asked for.
struct RolloutArrays {
  std::span<double> q, v, u, fx, fu, integrate_dq, integrate_dw, multipliers;
  // The touchdowns' impulses and the cones' residuals and derivatives (PlannedStep's offsets).
  std::span<double> impulses, friction_cones, dfriction_cones_dx, dfriction_cones_du;
  // The frames at each state, and their Jacobians.
  std::span<double> positions, rotations, frame_jacobians;
};

// What a rollout computes beside its states.
struct RolloutExtras {
  bool closed_loop = false;    // the request carries feedback about a nominal trajectory
  bool velocity_rows = false;  // as linearize()
  std::span<const int> frames = {};
  ReferenceFrame reference = ReferenceFrame::kLocal;
};

// The rollouts [begin, end), each from its x₀ with its constraints anchored there, or through the
// phases of the schedule. A rollout that
// diverges sets its steps and status in `response`, and zeros in its arrays past its last finite
// state.
void rollout(const Model& model, ModelWorkspace& ws, const v1::RolloutRequest& request,
             v1::RolloutResponse& response, const PlannedStep& step, const RolloutExtras& extras,
             int begin, int end, const RolloutArrays& out);

}  // namespace torqued::server
