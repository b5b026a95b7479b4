// Linearize's and Rollout's kernels: loops over a chunk's knots or rollouts around step() and
// rollout().
#include "server/compute/trajectory_kernels.hpp"

#include <algorithm>

#include "engine/algorithms/interruption.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "server/compute/dynamics_kernels.hpp"
#include "server/compute/state_arrays.hpp"

namespace torqued::server {
namespace {

using RowMajorMap = Eigen::Map<RowMajorMatrix>;

// `count` values at `at` of `values`, or none when `values` is null.
std::span<double> values_at(double* values, std::size_t at, std::size_t count) {
  return values == nullptr ? std::span<double>() : std::span<double>(values + at, count);
}

// The phase of a schedule that knot k falls in.
std::size_t phase_of(std::span<const CallPhase> phases, int k) {
  std::size_t p = 0;
  while (p + 1 < phases.size() && phases[p + 1].first_knot <= k) ++p;
  return p;
}

}  // namespace

void linearize(const Model& model, ModelWorkspace& ws, const v1::LinearizeRequest& request,
               const PlannedStep& step, bool velocity_rows, int begin, int end,
               const LinearizeOutput& out) {
  Data& data = ws.data;
  const int nq = model.nq, nv = model.nv, nx = 2 * nv;
  const int nu = static_cast<int>(step.actuated.size());
  const auto nv_size = static_cast<std::size_t>(nv), nu_size = static_cast<std::size_t>(nu);
  // Anchored once, at the call's first knot, or each phase at its own.
  AnchoredConstraints anchored(step.constraints);
  const std::span<const CallPhase> phases = step.phases;
  std::vector<std::vector<BilateralConstraint>> schedule;
  StepSettings settings;
  if (phases.empty()) {
    settings = step.settings(anchored.at(model, data, row(request.q(), 0, nq)));
  } else {
    schedule = anchored_schedule(model, data, phases, request.q().data());
  }
  std::size_t phase = phases.empty() ? 0 : phase_of(phases, begin);
  // With velocity rows the step writes only the v⁺ rows of Fx and Fu.
  const int jacobian_rows = velocity_rows ? nv : nx;
  const std::size_t blocks = velocity_rows ? integration_block_values(model) : 0;
  const auto nv2 = nv_size * nv_size;
  for (int k = begin; k < end; ++k) {
    const auto at = static_cast<std::size_t>(k);
    if (!phases.empty()) {
      while (phase + 1 < phases.size() && phases[phase + 1].first_knot <= k) ++phase;
      settings = step.settings(schedule[phase]);
      settings.touchdown = phases[phase].touchdown && phases[phase].first_knot == k;
      settings.restitution = phases[phase].restitution;
    }
    const std::size_t lambda_at = step.multipliers_at[at];
    const std::size_t rows = step.multipliers_at[at + 1] - lambda_at;
    const std::size_t cone_at = step.cones_at[at];
    const std::size_t cones = step.cones ? step.cones_at[at + 1] - cone_at : 0;
    const KnotDerivatives knot{
        values_at(out.da_dq, at * nv2, nv2),
        values_at(out.da_dv, at * nv2, nv2),
        values_at(out.da_dtau, at * nv2, nv2),
        values_at(out.dmultipliers_dq, lambda_at * nv_size, rows * nv_size),
        values_at(out.dmultipliers_dv, lambda_at * nv_size, rows * nv_size),
        values_at(out.dmultipliers_dtau, lambda_at * nv_size, rows * nv_size)};
    const std::ptrdiff_t knot_at = k;
    const StepOutput result{
        .q_next = Eigen::Map<Eigen::VectorXd>(out.q_next + knot_at * nq, nq),
        .v_next = Eigen::Map<Eigen::VectorXd>(out.v_next + knot_at * nv, nv),
        .fx = RowMajorMap(out.fx + knot_at * jacobian_rows * nx, jacobian_rows, nx),
        .fu = RowMajorMap(out.fu + knot_at * jacobian_rows * nu, jacobian_rows, nu),
        .multipliers = values_at(out.multipliers, lambda_at, rows),
        .impulses = settings.touchdown ? values_at(out.impulses, step.impulses_at[at], rows)
                                       : std::span<double>(),
        .friction_cones = values_at(out.friction_cones, cone_at, cones),
        .dfriction_cones_dx =
            values_at(out.dfriction_cones_dx, cone_at * 2 * nv_size, cones * 2 * nv_size),
        .dfriction_cones_du = values_at(out.dfriction_cones_du, cone_at * nu_size, cones * nu_size),
        .integrate_dq = values_at(out.integrate_dq, at * blocks, blocks),
        .integrate_dw = values_at(out.integrate_dw, at * blocks, blocks),
        .knot_derivatives = out.da_dq == nullptr ? nullptr : &knot};
    naming_state(
        k,
        [&] {
          torqued::step(model, data, row(request.q(), k, nq), row(request.v(), k, nv),
                        row(request.u(), k, nu), settings, result);
        },
        "knot");
  }
}

void rollout(const Model& model, ModelWorkspace& ws, const v1::RolloutRequest& request,
             v1::RolloutResponse& response, const PlannedStep& step, const RolloutExtras& extras,
             int begin, int end, const RolloutArrays& out) {
  Data& data = ws.data;
  const auto nq = static_cast<std::size_t>(model.nq);
  const auto nv = static_cast<std::size_t>(model.nv);
  const auto nu = step.actuated.size();
  const auto knots = static_cast<std::size_t>(request.knots());
  const auto nf = extras.frames.size();
  // A step's values of Fx, Fu (their v⁺ rows with velocity_rows) and of the blocks.
  const std::size_t jacobian_rows = extras.velocity_rows ? nv : 2 * nv;
  const std::size_t fx_values = jacobian_rows * 2 * nv, fu_values = jacobian_rows * nu;
  const std::size_t blocks = extras.velocity_rows ? integration_block_values(model) : 0;
  // A rollout's values of λ, impulses and cone residuals.
  const std::size_t rows = step.multipliers_at[knots];
  const std::size_t impulses = step.impulses_at[knots];
  const std::size_t cones = step.cones ? step.cones_at[knots] : 0;
  // Rollout r's part of an array of `per_rollout` values per rollout.
  const auto part = [](std::span<double> all, std::size_t r, std::size_t per_rollout) {
    return all.empty() ? all : all.subspan(r * per_rollout, per_rollout);
  };
  const auto values = [](const google::protobuf::RepeatedField<double>& field) {
    return std::span<const double>(field.data(), static_cast<std::size_t>(field.size()));
  };
  const RolloutFeedback feedback =
      extras.closed_loop ? RolloutFeedback{values(request.q_nominal()), values(request.v_nominal()),
                                           values(request.feedback())}
                         : RolloutFeedback{};
  InterruptionPoll poll(data.interruption);
  AnchoredConstraints anchored(step.constraints);
  // The schedule's contacts, this chunk's copy: rollout() anchors them at each rollout's
  // touchdowns.
  std::vector<std::vector<BilateralConstraint>> contacts;
  std::vector<ContactPhase> phases;
  contacts.reserve(step.phases.size());
  for (const CallPhase& phase : step.phases) {
    phases.push_back({.first_knot = phase.first_knot,
                      .contacts = contacts.emplace_back(phase.contacts.constraints),
                      .anchored_at_start = phase.contacts.held_in_place,
                      .restitution = phase.restitution});
  }
  for (int rollout_index = begin; rollout_index < end; ++rollout_index) {
    const auto r = static_cast<std::size_t>(rollout_index);
    const RolloutOutput parts{part(out.q, r, (knots + 1) * nq),
                              part(out.v, r, (knots + 1) * nv),
                              part(out.u, r, knots * nu),
                              part(out.fx, r, knots * fx_values),
                              part(out.fu, r, knots * fu_values),
                              part(out.multipliers, r, rows),
                              extras.velocity_rows,
                              part(out.integrate_dq, r, knots * blocks),
                              part(out.integrate_dw, r, knots * blocks),
                              part(out.impulses, r, impulses),
                              part(out.friction_cones, r, cones),
                              part(out.dfriction_cones_dx, r, cones * 2 * nv),
                              part(out.dfriction_cones_du, r, cones * nu)};
    std::size_t steps = knots;
    try {
      const ConstMap q0 = row(request.q(), rollout_index, model.nq);
      torqued::rollout(model, data, q0, row(request.v(), rollout_index, model.nv), request.knots(),
                       values(request.u()).subspan(r * knots * nu, knots * nu),
                       step.settings(phases.empty() ? anchored.at(model, data, q0)
                                                    : std::span<const BilateralConstraint>()),
                       feedback, parts, phases);
    } catch (const RolloutDiverged& diverged) {
      // Zeros past the last finite state, and the reason in the rollout's status.
      steps = static_cast<std::size_t>(diverged.steps());
      response.set_steps(rollout_index, static_cast<std::uint32_t>(steps));
      v1::CallStatus& status = *response.mutable_status(rollout_index);
      status.set_code(grpc::StatusCode::FAILED_PRECONDITION);
      status.set_message("rollout " + std::to_string(rollout_index) + ": " + diverged.what());
      const auto zero_from = [](std::span<double> values, std::size_t at) {
        if (!values.empty()) std::fill(values.begin() + at, values.end(), 0.0);
      };
      zero_from(parts.q, (steps + 1) * nq);
      zero_from(parts.v, (steps + 1) * nv);
      zero_from(parts.u, steps * nu);
      zero_from(parts.fx, steps * fx_values);
      zero_from(parts.fu, steps * fu_values);
      zero_from(parts.integrate_dq, steps * blocks);
      zero_from(parts.integrate_dw, steps * blocks);
      zero_from(parts.multipliers, step.multipliers_at[steps]);
      zero_from(parts.impulses, step.impulses_at[steps]);
      zero_from(parts.friction_cones, step.cones_at[steps]);
      zero_from(parts.dfriction_cones_dx, step.cones_at[steps] * 2 * nv);
      zero_from(parts.dfriction_cones_du, step.cones_at[steps] * nu);
      zero_from(part(out.positions, r, (knots + 1) * nf * 3), (steps + 1) * nf * 3);
      zero_from(part(out.rotations, r, (knots + 1) * nf * 9), (steps + 1) * nf * 9);
      zero_from(part(out.frame_jacobians, r, (knots + 1) * nf * 6 * nv), (steps + 1) * nf * 6 * nv);
    }
    if (nf == 0) continue;
    // The frames at each state: the kinematics again, as the dynamics left data at the step's last
    // stage.
    for (std::size_t state = 0; state <= steps; ++state) {
      poll.add(static_cast<double>(nf * 60 * nv));
      forward_kinematics(model, data,
                         Eigen::Map<const Eigen::VectorXd>(parts.q.data() + state * nq, model.nq));
      for (std::size_t f = 0; f < nf; ++f) {
        const std::size_t slot = (r * (knots + 1) + state) * nf + f;
        const Transform placement = frame_placement(model, data, extras.frames[f]);
        Eigen::Map<Vec3>(out.positions.data() + 3 * slot) = placement.translation;
        Eigen::Map<Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(out.rotations.data() + 9 * slot) =
            placement.rotation;
        if (out.frame_jacobians.empty()) continue;
        frame_jacobian(model, data, extras.frames[f], extras.reference, data.J);
        RowMajorMap(out.frame_jacobians.data() + 6 * nv * slot, 6, model.nv) = data.J;
      }
    }
  }
}

}  // namespace torqued::server
