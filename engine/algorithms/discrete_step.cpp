// The discrete step, with or without its Jacobians (see discrete_step.hpp). Each integrator is
// written once: the Jacobians are a branch beside each stage's values, so that the step without
// them is the step with them, operation by operation, less those branches.
#include "engine/algorithms/discrete_step.hpp"

#include <cassert>
#include <optional>

#include "engine/algorithms/impulse_dynamics.hpp"
#include "engine/algorithms/tree_sparse_product.hpp"
#include "engine/model/configuration.hpp"

namespace torqued {
namespace {

using RowMajorMap = Eigen::Map<RowMajorMatrix>;

// Where each RK4 stage is taken (h_i / dt) and its weight b_i in the step.
constexpr double kNodes[4] = {0.0, 0.5, 0.5, 1.0};
constexpr double kWeights[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};

// q̈ at (q, q̇) under τ, in data.ddq: ABA on a free tree, else the constrained dynamics with λ in
// `multipliers`. With `jacobians`, forward_dynamics_derivatives() instead, whose workspace is
// returned (λ is then in the ConstrainedDerivativesWorkspace); else null. A stage at a
// touchdown's q passes what the impact left on (constrained_dynamics_derivatives.hpp).
const AbaDerivativesWorkspace* stage_dynamics(const Model& model, Data& data,
                                              const ConstVectorRef& q, const ConstVectorRef& v,
                                              const Eigen::VectorXd& tau,
                                              const StepSettings& settings, bool jacobians,
                                              Eigen::Ref<Eigen::VectorXd> multipliers,
                                              const ImpactOperationalSpace* impact = nullptr) {
  if (jacobians) {
    return &forward_dynamics_derivatives(model, data, q, v, tau, settings.constraints,
                                         settings.gains, impact);
  }
  if (settings.constraints.empty() && model.loop_closures.empty()) {
    aba(model, data, q, v, tau);
  } else {
    constrained_dynamics(model, data, q, v, tau, settings.constraints, settings.gains, data.ddq,
                         multipliers);
  }
  return nullptr;
}

// The dynamics at the knot, the first stage: stage_dynamics(), with λ and the continuous
// derivatives written where `out` wants them.
const AbaDerivativesWorkspace* knot_dynamics(const Model& model, Data& data,
                                             const ConstVectorRef& q, const ConstVectorRef& v,
                                             const StepSettings& settings, StepOutput& out,
                                             bool jacobians, int rows,
                                             Eigen::Ref<Eigen::VectorXd> unreturned_multipliers) {
  const Eigen::VectorXd& tau = data.workspace<DiscreteStepWorkspace>().tau;
  const bool returns_multipliers = !out.multipliers.empty();
  Eigen::Map<Eigen::VectorXd> multipliers(out.multipliers.data(), returns_multipliers ? rows : 0);
  // After a touchdown the knot's q and contacts are the impact's.
  std::optional<ImpactOperationalSpace> impact;
  if (settings.touchdown && jacobians) {
    impact.emplace(
        ImpactOperationalSpace{data.workspace<MassInverseWorkspace>().Minv,
                               data.workspace<ImpulseDerivativesWorkspace>().inverse_inertia});
  }
  const AbaDerivativesWorkspace* d = stage_dynamics(
      model, data, q, v, tau, settings, jacobians,
      returns_multipliers ? Eigen::Ref<Eigen::VectorXd>(multipliers) : unreturned_multipliers,
      impact ? &*impact : nullptr);
  const bool cones = !out.friction_cones.empty();
  if (!jacobians) {
    if (cones) {
      contact_friction_cones(model, data, q, settings.constraints, settings.friction_cone,
                             returns_multipliers ? ConstVectorRef(multipliers)
                                                 : ConstVectorRef(unreturned_multipliers),
                             nullptr, settings.actuated_dofs, out.friction_cones, {}, {});
    }
    return d;
  }
  const ConstrainedDerivativesWorkspace& c = data.workspace<ConstrainedDerivativesWorkspace>();
  if (returns_multipliers) multipliers = c.lambda.head(rows);
  if (cones) {
    // At a touchdown λ's rates at v⁺ chain through the impact's ∂v⁺/∂(q, v⁻).
    const ImpulseDerivativesWorkspace& impact = data.workspace<ImpulseDerivativesWorkspace>();
    const MultiplierRates rates{c.dlambda_dq.topRows(rows), c.dlambda_dv.topRows(rows),
                                c.dlambda_dtau.topRows(rows),
                                settings.touchdown ? &impact.dvelocity_dq : nullptr,
                                settings.touchdown ? &impact.dvelocity_dv : nullptr};
    contact_friction_cones(model, data, q, settings.constraints, settings.friction_cone,
                           c.lambda.head(rows), out.dfriction_cones_dx.empty() ? nullptr : &rates,
                           settings.actuated_dofs, out.friction_cones, out.dfriction_cones_dx,
                           out.dfriction_cones_du);
  }
  if (const KnotDerivatives* knot = out.knot_derivatives; knot != nullptr) {
    const int nv = model.nv;
    RowMajorMap(knot->da_dq.data(), nv, nv) = d->ddq_dq;
    RowMajorMap(knot->da_dv.data(), nv, nv) = d->ddq_dv;
    RowMajorMap(knot->da_dtau.data(), nv, nv) = d->ddq_dtau;
    if (!knot->dlambda_dq.empty()) {
      RowMajorMap(knot->dlambda_dq.data(), rows, nv) = c.dlambda_dq.topRows(rows);
      RowMajorMap(knot->dlambda_dv.data(), rows, nv) = c.dlambda_dv.topRows(rows);
      RowMajorMap(knot->dlambda_dtau.data(), rows, nv) = c.dlambda_dtau.topRows(rows);
    }
  }
  return d;
}

// Writes the blocks of J_q and J_w of the last integration into dq and dw, the joints with several
// DOFs in joint order, each block row-major.
void write_integration_blocks(const Model& model, const DiscreteStepWorkspace& ws,
                              std::span<double> dq, std::span<double> dw) {
  assert(dq.size() == integration_block_values(model) && dw.size() == dq.size());
  std::size_t at = 0;
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int dofs = joint_nv(joint.type);
    if (dofs < 2) continue;
    RowMajorMap(dq.data() + at, dofs, dofs) =
        ws.integrate_dq.block(joint.idx_v, joint.idx_v, dofs, dofs);
    RowMajorMap(dw.data() + at, dofs, dofs) =
        ws.integrate_dstep.block(joint.idx_v, joint.idx_v, dofs, dofs);
    at += static_cast<std::size_t>(dofs) * static_cast<std::size_t>(dofs);
  }
}

// Rows F = [F_q F_q̇] of a step's Jacobian at (q, v⁺) chained through a touchdown's impact:
// ∂x⁺/∂q = F_q + F_q̇ ∂v⁺/∂q and ∂x⁺/∂v⁻ = F_q̇ ∂v⁺/∂v⁻, F_q̇ copied out first (column-major, for
// the vectorized kernel of dense products).
void chain_impact(ImpulseDerivativesWorkspace& impact, Data& data, RowMajorMatrixRef rows) {
  const int nv = static_cast<int>(impact.dvelocity_dq.rows());
  const int count = static_cast<int>(rows.rows());
  const auto block_values = static_cast<std::ptrdiff_t>(count) * nv;
  Eigen::Map<Eigen::MatrixXd> velocity_columns(impact.step_columns.data(), count, nv);
  Eigen::Map<Eigen::MatrixXd> minus_dq(impact.chained.data(), count, nv);
  Eigen::Map<Eigen::MatrixXd> minus_dv(impact.chained.data() + block_values, count, nv);
  velocity_columns = rows.rightCols(nv);
  InterruptionPoll poll(data.interruption);
  if (!tree_sparse::dense_negated_products(count, nv, velocity_columns.data(),
                                           impact.dvelocity_dq.data(), impact.dvelocity_dv.data(),
                                           minus_dq.data(), minus_dv.data(), poll)) {
    throw Interrupted();
  }
  rows.leftCols(nv) -= minus_dq;
  rows.rightCols(nv) = -minus_dv;
}

// At a touchdown (`impact`, with Jacobians) v is the impact's v⁺(q, v⁻): the v⁺ rows, which the
// dynamics give along (q, v⁺), are chained through ∂v⁺/∂(q, v⁻) before the q⁺ rows are made from
// them, so that the dense products span nv rows rather than 2 nv.
void euler_step(const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
                const StepSettings& settings, StepOutput& out, bool jacobians, int rows,
                Eigen::Ref<Eigen::VectorXd> unreturned_multipliers,
                ImpulseDerivativesWorkspace* impact) {
  const int nv = model.nv;
  const double dt = settings.dt;
  DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
  const AbaDerivativesWorkspace* d =
      knot_dynamics(model, data, q, v, settings, out, jacobians, rows, unreturned_multipliers);
  out.v_next = v + dt * data.ddq;
  // q moves with v⁺ (semi-implicit) or q̇.
  const bool semi_implicit = settings.integrator == Integrator::kSemiImplicitEuler;
  if (semi_implicit) {
    ws.step = dt * out.v_next;
  } else {
    ws.step = dt * v;
  }
  integrate(model, q, ws.step, out.q_next);
  if (!jacobians) return;

  // The v⁺ rows.
  out.fx.bottomLeftCorner(nv, nv) = dt * d->ddq_dq;
  out.fx.bottomRightCorner(nv, nv) = dt * d->ddq_dv;
  out.fx.bottomRightCorner(nv, nv).diagonal().array() += 1.0;
  if (impact != nullptr) chain_impact(*impact, data, out.fx.bottomRows(nv));
  for (std::size_t c = 0; c < settings.actuated_dofs.size(); ++c) {
    out.fu.col(static_cast<Eigen::Index>(c)).tail(nv) =
        dt * d->ddq_dtau.col(settings.actuated_dofs[c]);
  }
  integrate_jacobians(model, ws.step, ws.integrate_dq, ws.integrate_dstep);
  if (out.fx.rows() == nv) {
    if (!out.integrate_dq.empty()) {
      write_integration_blocks(model, ws, out.integrate_dq, out.integrate_dw);
    }
    return;
  }
  // The q⁺ rows, joint by joint.
  for_each_joint_block(model, [&]<int kDofs>(int at) {
    const Eigen::Matrix<double, kDofs, kDofs> jw =
        dt * ws.integrate_dstep.block<kDofs, kDofs>(at, at);
    if (semi_implicit) {
      // dt J_w times the v⁺ rows, and J_q on the diagonal.
      out.fx.middleRows<kDofs>(at).noalias() = jw * out.fx.middleRows<kDofs>(nv + at);
      out.fx.block<kDofs, kDofs>(at, at) += ws.integrate_dq.block<kDofs, kDofs>(at, at);
      out.fu.middleRows<kDofs>(at).noalias() = jw * out.fu.middleRows<kDofs>(nv + at);
    } else if (impact != nullptr) {
      // J_q, and dt J_w times ∂v⁺/∂(q, v⁻).
      out.fx.middleRows<kDofs>(at).leftCols(nv).noalias() =
          jw * impact->dvelocity_dq.middleRows<kDofs>(at);
      out.fx.middleRows<kDofs>(at).rightCols(nv).noalias() =
          jw * impact->dvelocity_dv.middleRows<kDofs>(at);
      out.fx.block<kDofs, kDofs>(at, at) += ws.integrate_dq.block<kDofs, kDofs>(at, at);
      out.fu.middleRows<kDofs>(at).setZero();
    } else {
      // J_q, dt J_w, and nothing from u.
      out.fx.middleRows<kDofs>(at).setZero();
      out.fx.block<kDofs, kDofs>(at, at) = ws.integrate_dq.block<kDofs, kDofs>(at, at);
      out.fx.block<kDofs, kDofs>(at, nv + at) = jw;
      out.fu.middleRows<kDofs>(at).setZero();
    }
  });
}

// y = x ⊕ h k's Jacobians: y_x = J_x + h J_w k_x and y_u = h J_w k_u, where J_x and J_w are those
// of q ⊕ w at w = h k's q̇ part, in ws, and the identity for the velocity part.
template <class SlopeX, class SlopeU, class StateX, class StateU>
void integrate_rows(const Model& model, const DiscreteStepWorkspace& ws, double h,
                    const SlopeX& k_x, const SlopeU& k_u, StateX&& y_x, StateU&& y_u) {
  const int nv = model.nv;
  y_x.bottomRows(nv) = h * k_x.bottomRows(nv);
  y_x.bottomRightCorner(nv, nv).diagonal().array() += 1.0;
  y_u.bottomRows(nv) = h * k_u.bottomRows(nv);
  for_each_joint_block(model, [&]<int kDofs>(int at) {
    const Eigen::Matrix<double, kDofs, kDofs> jw =
        h * ws.integrate_dstep.template block<kDofs, kDofs>(at, at);
    y_x.template middleRows<kDofs>(at).noalias() = jw * k_x.template middleRows<kDofs>(at);
    y_x.template block<kDofs, kDofs>(at, at) +=
        ws.integrate_dq.template block<kDofs, kDofs>(at, at);
    y_u.template middleRows<kDofs>(at).noalias() = jw * k_u.template middleRows<kDofs>(at);
  });
}

void runge_kutta_step(const Model& model, Data& data, const ConstVectorRef& q,
                      const ConstVectorRef& v, const StepSettings& settings, StepOutput& out,
                      bool jacobians, int rows,
                      Eigen::Ref<Eigen::VectorXd> unreturned_multipliers) {
  const int nv = model.nv;
  const double dt = settings.dt;
  const std::span<const int> actuated = settings.actuated_dofs;
  const auto nu = static_cast<Eigen::Index>(actuated.size());
  DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
  RungeKuttaWorkspace& rk = data.workspace<RungeKuttaWorkspace>();
  auto dstage_du = rk.dstage_du.leftCols(nu);
  auto dslope_du = rk.dslope_du.leftCols(nu);
  auto dslopes_du = rk.dslopes_du.leftCols(nu);
  rk.slopes.setZero();
  if (jacobians) {
    rk.dslopes_dx.setZero();
    dslopes_du.setZero();
  }

  for (int i = 0; i < 4; ++i) {
    const AbaDerivativesWorkspace* d;
    if (i == 0) {
      d = knot_dynamics(model, data, q, v, settings, out, jacobians, rows, unreturned_multipliers);
      rk.slope.head(nv) = v;
      if (jacobians) {
        // ∂k₁/∂x = [0 I; ∂q̈/∂q ∂q̈/∂q̇], ∂k₁/∂u = [0; ∂q̈/∂τ B].
        rk.dslope_dx.topLeftCorner(nv, nv).setZero();
        rk.dslope_dx.topRightCorner(nv, nv).setIdentity();
        rk.dslope_dx.bottomLeftCorner(nv, nv) = d->ddq_dq;
        rk.dslope_dx.bottomRightCorner(nv, nv) = d->ddq_dv;
        dslope_du.setZero();
      }
    } else {
      // y_i = x ⊕ h_i k_{i−1}, from the previous stage's slope before it is overwritten.
      const double h = kNodes[i] * dt;
      ws.step = h * rk.slope.head(nv);
      integrate(model, q, ws.step, rk.stage_q);
      rk.stage_v = v + h * rk.slope.tail(nv);
      if (jacobians) {
        integrate_jacobians(model, ws.step, ws.integrate_dq, ws.integrate_dstep);
        integrate_rows(model, ws, h, rk.dslope_dx, dslope_du, rk.dstage_dx, dstage_du);
      }
      d = stage_dynamics(model, data, rk.stage_q, rk.stage_v, ws.tau, settings, jacobians,
                         unreturned_multipliers);
      rk.slope.head(nv) = rk.stage_v;
      if (jacobians) {
        rk.dslope_dx.topRows(nv) = rk.dstage_dx.bottomRows(nv);
        rk.dslope_dx.bottomRows(nv).noalias() = d->ddq_dq * rk.dstage_dx.topRows(nv);
        rk.dslope_dx.bottomRows(nv).noalias() += d->ddq_dv * rk.dstage_dx.bottomRows(nv);
        dslope_du.topRows(nv) = dstage_du.bottomRows(nv);
        dslope_du.bottomRows(nv).noalias() = d->ddq_dq * dstage_du.topRows(nv);
        dslope_du.bottomRows(nv).noalias() += d->ddq_dv * dstage_du.bottomRows(nv);
      }
    }
    rk.slope.tail(nv) = data.ddq;
    rk.slopes += kWeights[i] * rk.slope;
    if (jacobians) {
      for (Eigen::Index c = 0; c < nu; ++c) {
        dslope_du.col(c).tail(nv) += d->ddq_dtau.col(actuated[c]);
      }
      rk.dslopes_dx += kWeights[i] * rk.dslope_dx;
      dslopes_du += kWeights[i] * dslope_du;
    }
  }

  // x⁺ = x ⊕ dt Σ b_i k_i.
  ws.step = dt * rk.slopes.head(nv);
  integrate(model, q, ws.step, out.q_next);
  out.v_next = v + dt * rk.slopes.tail(nv);
  if (!jacobians) return;
  integrate_jacobians(model, ws.step, ws.integrate_dq, ws.integrate_dstep);
  integrate_rows(model, ws, dt, rk.dslopes_dx, dslopes_du, out.fx, out.fu);
}

}  // namespace

bool step_leaves_knot_placements(const Model& model, const StepSettings& settings) {
  return settings.integrator != Integrator::kRungeKutta4 && settings.constraints.empty() &&
         model.loop_closures.empty() && !settings.touchdown;
}

void step(const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
          const ConstVectorRef& u, const StepSettings& settings, StepOutput out) {
  [[maybe_unused]] const int nv = model.nv;  // by the asserts
  const int rows = constraint_rows(model, settings.constraints);
  const bool jacobians = out.fx.rows() > 0;
  assert(u.size() == static_cast<Eigen::Index>(settings.actuated_dofs.size()));
  assert(out.q_next.size() == model.nq && out.v_next.size() == nv);
  assert(!jacobians ||
         ((out.fx.rows() == 2 * nv ||
           (out.fx.rows() == nv && settings.integrator != Integrator::kRungeKutta4)) &&
          out.fx.cols() == 2 * nv && out.fu.rows() == out.fx.rows() && out.fu.cols() == u.size()));
  assert(out.multipliers.empty() || out.multipliers.size() == static_cast<std::size_t>(rows));
  assert(out.impulses.empty() ||
         (settings.touchdown && out.impulses.size() == static_cast<std::size_t>(rows)));
  assert(out.knot_derivatives == nullptr || jacobians);
  assert(out.dfriction_cones_dx.empty() || (jacobians && !out.friction_cones.empty()));
  // The q⁺ rows of an explicit Euler step through an impact read ∂v⁺/∂x, which the v⁺ rows alone
  // do not carry.
  assert(!(settings.touchdown && out.fx.rows() == nv &&
           settings.integrator == Integrator::kExplicitEuler));
  data.bind(model, kStepWorkspaces);
  // λ not returned (the later RK4 stages', or the knot's when not wanted) goes to a buffer of the
  // constraint rows that constrained_dynamics() leaves alone.
  ConstraintWorkspace& cw = data.workspace<ConstraintWorkspace>();
  cw.reserve_rows(model, rows);
  actuate(settings.actuated_dofs, u, data.workspace<DiscreteStepWorkspace>().tau);
  // A touchdown's impact: the step starts from v⁺.
  const ImpulseDerivativesWorkspace* impact = nullptr;
  if (settings.touchdown) {
    if (jacobians) {
      impact = &impulse_dynamics_derivatives(model, data, q, v, settings.constraints,
                                             settings.restitution, settings.gains.tolerance);
    } else {
      ImpulseDerivativesWorkspace& w = data.workspace<ImpulseDerivativesWorkspace>();
      w.reserve_rows(model, rows);
      impulse_dynamics(model, data, q, v, settings.constraints, settings.restitution,
                       settings.gains.tolerance, w.velocity, w.impulses.head(rows));
      impact = &w;
    }
    if (!out.impulses.empty()) {
      Eigen::Map<Eigen::VectorXd>(out.impulses.data(), rows) = impact->impulses.head(rows);
    }
  }
  const ConstVectorRef v_start = impact != nullptr ? ConstVectorRef(impact->velocity) : v;
  ImpulseDerivativesWorkspace* chained =
      jacobians && impact != nullptr ? &data.workspace<ImpulseDerivativesWorkspace>() : nullptr;
  if (settings.integrator == Integrator::kRungeKutta4) {
    runge_kutta_step(model, data, q, v_start, settings, out, jacobians, rows, cw.rhs.head(rows));
    if (chained != nullptr) chain_impact(*chained, data, out.fx);
  } else {
    euler_step(model, data, q, v_start, settings, out, jacobians, rows, cw.rhs.head(rows), chained);
  }
}

std::size_t integration_block_values(const Model& model) {
  std::size_t values = 0;
  for (int i = 1; i < model.nbodies(); ++i) {
    const auto dofs = static_cast<std::size_t>(joint_nv(model.joints[i].type));
    if (dofs > 1) values += dofs * dofs;
  }
  return values;
}

}  // namespace torqued
