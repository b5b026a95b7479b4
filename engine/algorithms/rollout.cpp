// The shooting forward pass (see rollout.hpp).
#include "engine/algorithms/rollout.hpp"

#include <cassert>

#include "engine/algorithms/interruption.hpp"
#include "engine/model/configuration.hpp"

namespace torqued {

void rollout(const Model& model, Data& data, const ConstVectorRef& q0, const ConstVectorRef& v0,
             int knots, std::span<const double> controls, const StepSettings& settings,
             const RolloutFeedback& feedback, const RolloutOutput& out) {
  using ConstRow = Eigen::Map<const Eigen::VectorXd>;
  using Row = Eigen::Map<Eigen::VectorXd>;
  const int nq = model.nq, nv = model.nv, nx = 2 * nv;
  const int nu = static_cast<int>(settings.actuated_dofs.size());
  const int rows = constraint_rows(model, settings.constraints);
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
  assert(!multipliers || out.multipliers.size() == k_size * rows);
  data.bind(model, kRolloutWorkspaces);
  InterruptionPoll poll(data.interruption);
  Row(out.q.data(), nq) = q0;
  Row(out.v.data(), nv) = v0;

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
    const StepOutput step_out{.q_next = Row(out.q.data() + (at + 1) * nq, nq),
                              .v_next = Row(out.v.data() + (at + 1) * nv, nv),
                              .fx = matrix(out.fx, nx),
                              .fu = matrix(out.fu, nu),
                              .multipliers = part(out.multipliers, static_cast<std::size_t>(rows)),
                              .integrate_dq = part(out.integrate_dq, block_values),
                              .integrate_dw = part(out.integrate_dw, block_values)};
    step(model, data, q, v, u, settings, step_out);
  };

  for (int k = 0; k < knots; ++k) {
    poll.poll();
    try {
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
