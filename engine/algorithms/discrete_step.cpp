// The discrete steps without their Jacobians (see discrete_step.hpp). The arithmetic follows
// euler_step_derivatives() and runge_kutta_step_derivatives() operation by operation, so that a
// forward pass and a linearization of the same knots see the same states to rounding.
#include "engine/algorithms/discrete_step.hpp"

#include <cassert>

#include "engine/model/configuration.hpp"

namespace torqued {
namespace {

// Where each RK4 stage is taken (h_i / dt) and its weight b_i in the step.
constexpr double kNodes[4] = {0.0, 0.5, 0.5, 1.0};
constexpr double kWeights[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};

// q̈ at (q, q̇) under τ, in data.ddq: ABA on a free tree, else the constrained dynamics with λ in
// `multipliers`.
void step_dynamics(const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
                   const Eigen::VectorXd& tau, std::span<const BilateralConstraint> constraints,
                   const BaumgarteGains& gains, Eigen::Ref<Eigen::VectorXd> multipliers) {
  if (constraints.empty() && model.loop_closures.empty()) {
    aba(model, data, q, v, tau);
  } else {
    constrained_dynamics(model, data, q, v, tau, constraints, gains, data.ddq, multipliers);
  }
}

}  // namespace

void discrete_step(const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
                   const ConstVectorRef& u, double dt, Integrator integrator,
                   std::span<const int> actuated_dofs, Eigen::Ref<Eigen::VectorXd> q_next,
                   Eigen::Ref<Eigen::VectorXd> v_next,
                   std::span<const BilateralConstraint> constraints, const BaumgarteGains& gains,
                   std::span<double> multipliers) {
  const int nv = model.nv;
  const int rows = constraint_rows(model, constraints);
  assert(u.size() == static_cast<Eigen::Index>(actuated_dofs.size()));
  assert(q_next.size() == model.nq && v_next.size() == nv);
  const bool returns_multipliers = !multipliers.empty();
  assert(!returns_multipliers || multipliers.size() == static_cast<std::size_t>(rows));
  data.bind(model, kDiscreteStepWorkspaces);
  DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
  // λ not returned (the later RK4 stages', or the knot's when not wanted) goes to a buffer of the
  // constraint rows that constrained_dynamics() leaves alone.
  ConstraintWorkspace& cw = data.workspace<ConstraintWorkspace>();
  cw.reserve_rows(model, rows);
  auto unreturned_multipliers = cw.rhs.head(rows);
  actuate(actuated_dofs, u, ws.tau);
  if (returns_multipliers) {
    step_dynamics(model, data, q, v, ws.tau, constraints, gains,
                  Eigen::Map<Eigen::VectorXd>(multipliers.data(), rows));
  } else {
    step_dynamics(model, data, q, v, ws.tau, constraints, gains, unreturned_multipliers);
  }

  if (integrator != Integrator::kRungeKutta4) {
    if (integrator == Integrator::kSemiImplicitEuler) {
      ws.step = dt * (v + dt * data.ddq);
    } else {
      ws.step = dt * v;
    }
    v_next = v + dt * data.ddq;
    integrate(model, q, ws.step, q_next);
    return;
  }

  RungeKuttaWorkspace& rk = data.workspace<RungeKuttaWorkspace>();
  rk.slopes.setZero();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      // y_i = x ⊕ h_i k_{i−1}, from the previous stage's slope before it is overwritten.
      const double h = kNodes[i] * dt;
      ws.step = h * rk.slope.head(nv);
      integrate(model, q, ws.step, rk.stage_q);
      rk.stage_v = v + h * rk.slope.tail(nv);
      step_dynamics(model, data, rk.stage_q, rk.stage_v, ws.tau, constraints, gains,
                    unreturned_multipliers);
      rk.slope.head(nv) = rk.stage_v;
    } else {
      rk.slope.head(nv) = v;
    }
    rk.slope.tail(nv) = data.ddq;
    rk.slopes += kWeights[i] * rk.slope;
  }
  ws.step = dt * rk.slopes.head(nv);
  integrate(model, q, ws.step, q_next);
  v_next = v + dt * rk.slopes.tail(nv);
}

}  // namespace torqued
