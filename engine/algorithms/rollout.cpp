// The shooting forward pass (see rollout.hpp).
#include "engine/algorithms/rollout.hpp"

#include <cassert>

#include "engine/algorithms/interruption.hpp"
#include "engine/model/configuration.hpp"

namespace torqued {

void rollout(const Model& model, Data& data, const ConstVectorRef& q0, const ConstVectorRef& v0,
             int knots, std::span<const double> controls, double dt, Integrator integrator,
             std::span<const int> actuated_dofs, std::span<const BilateralConstraint> constraints,
             const BaumgarteGains& baumgarte, const RolloutFeedback& feedback,
             const RolloutOutput& out) {
  using ConstRow = Eigen::Map<const Eigen::VectorXd>;
  using Row = Eigen::Map<Eigen::VectorXd>;
  const int nq = model.nq, nv = model.nv, nx = 2 * nv;
  const int nu = static_cast<int>(actuated_dofs.size());
  const int rows = constraint_rows(model, constraints);
  const bool closed_loop = !feedback.gains.empty();
  const bool jacobians = !out.fx.empty();
  const bool multipliers = !out.multipliers.empty();
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
  assert(!out.velocity_rows || (integrator != Integrator::kRungeKutta4 &&
                                out.integrate_dq.size() == k_size * block_values &&
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
    Row q_next(out.q.data() + (at + 1) * nq, nq);
    Row v_next(out.v.data() + (at + 1) * nv, nv);
    Row lambda(multipliers ? out.multipliers.data() + at * rows : nullptr, multipliers ? rows : 0);
    if (!jacobians) {
      discrete_step(model, data, q, v, u, dt, integrator, actuated_dofs, q_next, v_next,
                    constraints, baumgarte,
                    multipliers ? out.multipliers.subspan(at * rows, rows) : std::span<double>());
      return;
    }
    const DiscreteStepOutput step{
        q_next, v_next,
        Eigen::Map<RowMajorMatrix>(out.fx.data() + at * jacobian_rows * nx, jacobian_rows, nx),
        Eigen::Map<RowMajorMatrix>(out.fu.data() + at * jacobian_rows * nu, jacobian_rows, nu)};
    if (integrator == Integrator::kRungeKutta4) {
      runge_kutta_step_derivatives(model, data, q, v, u, dt, actuated_dofs, step, constraints,
                                   baumgarte);
      if (multipliers) {
        // The step leaves its last stage's λ; the knot's is the constrained dynamics at x_k.
        DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
        constrained_dynamics(model, data, q, v, ws.tau, constraints, baumgarte, ws.step, lambda);
      }
    } else {
      euler_step_derivatives(model, data, q, v, u, dt,
                             integrator == Integrator::kExplicitEuler ? EulerStep::kExplicit
                                                                      : EulerStep::kSemiImplicit,
                             actuated_dofs, step, constraints, baumgarte);
      if (out.velocity_rows) {
        const auto blocks = static_cast<std::size_t>(at) * block_values;
        write_integration_blocks(model, data, out.integrate_dq.subspan(blocks, block_values),
                                 out.integrate_dw.subspan(blocks, block_values));
      }
      if (multipliers) lambda = data.workspace<ConstrainedDerivativesWorkspace>().lambda.head(rows);
    }
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
