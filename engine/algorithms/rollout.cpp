// The shooting forward pass (see rollout.hpp).
#include "engine/algorithms/rollout.hpp"

#include <cassert>

#include "engine/algorithms/interruption.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/model/configuration.hpp"

namespace torqued {

namespace {

bool same_contact(const BilateralConstraint& a, const BilateralConstraint& b) {
  return a.type == b.type && a.body1 == b.body1 && a.body2 == b.body2 &&
         a.placement1.translation == b.placement1.translation &&
         a.placement1.rotation == b.placement1.rotation;
}

// The phase knot k falls in.
int phase_of(std::span<const ContactPhase> phases, int k, int from) {
  int p = from;
  while (p + 1 < static_cast<int>(phases.size()) && phases[p + 1].first_knot <= k) ++p;
  return p;
}

}  // namespace

const BilateralConstraint* held_contact(std::span<const BilateralConstraint> previous,
                                        const BilateralConstraint& contact) {
  for (const BilateralConstraint& p : previous) {
    if (same_contact(contact, p)) return &p;
  }
  return nullptr;
}

bool adds_contact(std::span<const BilateralConstraint> previous,
                  std::span<const BilateralConstraint> next) {
  for (const BilateralConstraint& c : next) {
    if (held_contact(previous, c) == nullptr) return true;
  }
  return false;
}

ScheduleRows schedule_rows(const Model& model, int knots,
                           std::span<const BilateralConstraint> constraints,
                           std::span<const ContactPhase> phases) {
  const auto k_size = static_cast<std::size_t>(knots);
  if (phases.empty()) {
    return {k_size * static_cast<std::size_t>(constraint_rows(model, constraints)), 0,
            k_size * constraints.size()};
  }
  ScheduleRows rows;
  for (std::size_t p = 0; p < phases.size(); ++p) {
    const auto end =
        p + 1 < phases.size() ? static_cast<std::size_t>(phases[p + 1].first_knot) : k_size;
    const auto phase_rows = static_cast<std::size_t>(constraint_rows(model, phases[p].contacts));
    const std::size_t phase_knots = end - static_cast<std::size_t>(phases[p].first_knot);
    rows.multipliers += phase_knots * phase_rows;
    rows.contacts += phase_knots * phases[p].contacts.size();
    if (p > 0 && adds_contact(phases[p - 1].contacts, phases[p].contacts)) {
      rows.impulses += phase_rows;
    }
  }
  return rows;
}

void rollout(const Model& model, Data& data, const ConstVectorRef& q0, const ConstVectorRef& v0,
             int knots, std::span<const double> controls, const StepSettings& settings,
             const RolloutFeedback& feedback, const RolloutOutput& out,
             std::span<const ContactPhase> phases) {
  using ConstRow = Eigen::Map<const Eigen::VectorXd>;
  using Row = Eigen::Map<Eigen::VectorXd>;
  const int nq = model.nq, nv = model.nv, nx = 2 * nv;
  const int nu = static_cast<int>(settings.actuated_dofs.size());
  const bool closed_loop = !feedback.gains.empty();
  const bool jacobians = !out.fx.empty();
  [[maybe_unused]] const bool multipliers = !out.multipliers.empty();
  [[maybe_unused]] const auto k_size = static_cast<std::size_t>(knots);
  assert(controls.size() == k_size * nu && out.u.size() == k_size * nu);
  assert(out.q.size() == (k_size + 1) * nq && out.v.size() == (k_size + 1) * nv);
  assert(!closed_loop ||
         (feedback.q_nominal.size() == k_size * nq && feedback.v_nominal.size() == k_size * nv &&
          feedback.gains.size() == k_size * nu * nx));
  // The rows of Fx and Fu written: the v⁺ rows only, or all.
  const int jacobian_rows = out.velocity_rows ? nv : nx;
  const std::size_t block_values = out.velocity_rows ? integration_block_values(model) : 0;
  assert(!jacobians || (out.fx.size() == k_size * jacobian_rows * nx &&
                        out.fu.size() == k_size * jacobian_rows * nu));
  assert(!out.velocity_rows || (out.integrate_dq.size() == k_size * block_values &&
                                out.integrate_dw.size() == k_size * block_values));
#ifndef NDEBUG
  // The arrays' sizes, checked in debug builds only: the schedule's rows cost a pass over it.
  const ScheduleRows schedule = schedule_rows(model, knots, settings.constraints, phases);
  assert(!multipliers || out.multipliers.size() == schedule.multipliers);
  assert(out.impulses.empty() || out.impulses.size() == schedule.impulses);
  assert(out.friction_cones.empty() ||
         out.friction_cones.size() ==
             schedule.contacts *
                 static_cast<std::size_t>(friction_cone_values(settings.friction_cone)));
#endif
  assert(out.dfriction_cones_dx.empty() ||
         (jacobians && out.dfriction_cones_dx.size() == out.friction_cones.size() * nx &&
          out.dfriction_cones_du.size() == out.friction_cones.size() * nu));
  assert(phases.empty() || (settings.constraints.empty() && phases.front().first_knot == 0));
  data.bind(model, kRolloutWorkspaces);
  InterruptionPoll poll(data.interruption);
  Row(out.q.data(), nq) = q0;
  Row(out.v.data(), nv) = v0;

  // The knot's settings: its phase's contacts, and a touchdown at the first knot of a phase that
  // adds one. Where the arrays of λ and impulses have got to.
  StepSettings knot_settings = settings;
  int phase = 0;
  std::size_t multiplier_at = 0, impulse_at = 0, cone_at = 0;
  const auto enter_phase = [&](int k) {
    if (phases.empty()) return;
    const int p = phase_of(phases, k, phase);
    const ContactPhase& current = phases[p];
    knot_settings.touchdown = false;
    if (current.first_knot != k) return;
    phase = p;
    knot_settings.constraints = current.contacts;
    knot_settings.restitution = current.restitution;
    knot_settings.touchdown = p > 0 && adds_contact(phases[p - 1].contacts, current.contacts);
    bool placed = false;
    for (const int i : current.anchored_at_start) {
      BilateralConstraint& c = current.contacts[static_cast<std::size_t>(i)];
      assert(c.body2 == 0);
      // A contact the phase before held stays where that phase held it.
      const BilateralConstraint* held = p > 0 ? held_contact(phases[p - 1].contacts, c) : nullptr;
      if (held != nullptr) {
        c.placement2 = held->placement2;
        continue;
      }
      if (!placed) {
        forward_kinematics(model, data, ConstRow(out.q.data() + std::ptrdiff_t{k} * nq, nq));
        placed = true;
      }
      c.placement2 = data.oMi[c.body1] * c.placement1;
    }
  };

  // Step k: u_k, x_{k+1} and what was asked beside them.
  const auto take_step = [&](int k) {
    const std::ptrdiff_t at = k;
    const ConstRow q(out.q.data() + at * nq, nq);
    const ConstRow v(out.v.data() + at * nv, nv);
    Row u(out.u.data() + at * nu, nu);
    u = ConstRow(controls.data() + at * nu, nu);
    if (closed_loop) {
      // u += K_k (x_k ⊖ x̄_k).
      Eigen::VectorXd& error = data.workspace<DiscreteStepWorkspace>().state_error;
      difference(model, ConstRow(feedback.q_nominal.data() + at * nq, nq), q, error.head(nv));
      error.tail(nv) = v - ConstRow(feedback.v_nominal.data() + at * nv, nv);
      u.noalias() +=
          Eigen::Map<const RowMajorMatrix>(feedback.gains.data() + at * nu * nx, nu, nx) * error;
    }
    // Step k's share of an array of `per_step` values per step, or nothing.
    const auto part = [at](std::span<double> all, std::size_t per_step) {
      return all.empty() ? all : all.subspan(static_cast<std::size_t>(at) * per_step, per_step);
    };
    const auto matrix = [&](std::span<double> all, int cols) {
      return Eigen::Map<RowMajorMatrix>(
          jacobians ? all.data() + at * jacobian_rows * cols : nullptr,
          jacobians ? jacobian_rows : 0, cols);
    };
    const auto rows = static_cast<std::size_t>(constraint_rows(model, knot_settings.constraints));
    const auto next = [&](std::span<double> all, std::size_t& from, std::size_t count) {
      if (all.empty()) return all;
      const std::span<double> mine = all.subspan(from, count);
      from += count;
      return mine;
    };
    const std::size_t cones =
        knot_settings.constraints.size() *
        static_cast<std::size_t>(friction_cone_values(knot_settings.friction_cone));
    std::size_t cone_rates_at = cone_at;
    const auto rates = [&](std::span<double> all, std::size_t per_value) {
      return all.empty() ? all : all.subspan(cone_rates_at * per_value, cones * per_value);
    };
    const StepOutput step_out{.q_next = Row(out.q.data() + (at + 1) * nq, nq),
                              .v_next = Row(out.v.data() + (at + 1) * nv, nv),
                              .fx = matrix(out.fx, nx),
                              .fu = matrix(out.fu, nu),
                              .multipliers = next(out.multipliers, multiplier_at, rows),
                              .impulses = knot_settings.touchdown
                                              ? next(out.impulses, impulse_at, rows)
                                              : std::span<double>(),
                              .friction_cones = next(out.friction_cones, cone_at, cones),
                              .dfriction_cones_dx = rates(out.dfriction_cones_dx, nx),
                              .dfriction_cones_du = rates(out.dfriction_cones_du, nu),
                              .integrate_dq = part(out.integrate_dq, block_values),
                              .integrate_dw = part(out.integrate_dw, block_values)};
    step(model, data, q, v, u, knot_settings, step_out);
  };

  for (int k = 0; k < knots; ++k) {
    poll.poll();
    try {
      enter_phase(k);
      take_step(k);
    } catch (const SingularSystemError& singular) {
      throw RolloutDiverged(k, singular.what());
    }
    const std::ptrdiff_t next = k + 1;
    if (!ConstRow(out.q.data() + next * nq, nq).allFinite() ||
        !ConstRow(out.v.data() + next * nv, nv).allFinite() ||
        !ConstRow(out.u.data() + k * std::ptrdiff_t{nu}, nu).allFinite()) {
      throw RolloutDiverged(k,
                            "the state after it is not finite (the controls or the feedback "
                            "drove it away)");
    }
  }
}

}  // namespace torqued
