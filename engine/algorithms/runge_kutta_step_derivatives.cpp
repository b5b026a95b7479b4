// The RK4 step and its Jacobians (see runge_kutta_step_derivatives.hpp).
#include "engine/algorithms/runge_kutta_step_derivatives.hpp"

#include <cassert>

#include "engine/model/configuration.hpp"

namespace torqued {
namespace {

// Where each stage is taken (h_i / dt) and its weight b_i in the step.
constexpr double kNodes[4] = {0.0, 0.5, 0.5, 1.0};
constexpr double kWeights[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};

// y = x ⊕ h k and its Jacobians: y_x = J_x + h J_w k_x and y_u = h J_w k_u, where J_x and J_w are
// those of q ⊕ w at w = h k's q̇ part, in ws, and the identity for the velocity part.
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

}  // namespace

void runge_kutta_step_derivatives(const Model& model, Data& data, const ConstVectorRef& q,
                                  const ConstVectorRef& v, const ConstVectorRef& u, double dt,
                                  std::span<const int> actuated_dofs, DiscreteStepOutput out,
                                  std::span<const BilateralConstraint> constraints,
                                  const BaumgarteGains& gains) {
  const int nv = model.nv;
  const Eigen::Index nu = u.size();
  assert(nu == static_cast<Eigen::Index>(actuated_dofs.size()));
  assert(out.fx.rows() == 2 * nv && out.fx.cols() == 2 * nv);
  assert(out.fu.rows() == 2 * nv && out.fu.cols() == nu);
  data.bind(model, kRungeKuttaStepWorkspaces);
  DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
  RungeKuttaWorkspace& rk = data.workspace<RungeKuttaWorkspace>();
  actuate(actuated_dofs, u, ws.tau);
  auto dstage_du = rk.dstage_du.leftCols(nu);
  auto dslope_du = rk.dslope_du.leftCols(nu);
  auto dslopes_du = rk.dslopes_du.leftCols(nu);
  rk.slopes.setZero();
  rk.dslopes_dx.setZero();
  dslopes_du.setZero();

  for (int i = 0; i < 4; ++i) {
    const AbaDerivativesWorkspace* d;
    if (i == 0) {
      d = &forward_dynamics_derivatives(model, data, q, v, ws.tau, constraints, gains);
      rk.slope.head(nv) = v;
      // ∂k₁/∂x = [0 I; ∂q̈/∂q ∂q̈/∂q̇], ∂k₁/∂u = [0; ∂q̈/∂τ B].
      rk.dslope_dx.topLeftCorner(nv, nv).setZero();
      rk.dslope_dx.topRightCorner(nv, nv).setIdentity();
      rk.dslope_dx.bottomLeftCorner(nv, nv) = d->ddq_dq;
      rk.dslope_dx.bottomRightCorner(nv, nv) = d->ddq_dv;
      dslope_du.topRows(nv).setZero();
      dslope_du.bottomRows(nv).setZero();
    } else {
      // y_i = x ⊕ h_i k_{i−1}, from the previous stage's slope before it is overwritten.
      const double h = kNodes[i] * dt;
      ws.step = h * rk.slope.head(nv);
      integrate(model, q, ws.step, rk.stage_q);
      rk.stage_v = v + h * rk.slope.tail(nv);
      integrate_jacobians(model, ws.step, ws.integrate_dq, ws.integrate_dstep);
      integrate_rows(model, ws, h, rk.dslope_dx, dslope_du, rk.dstage_dx, dstage_du);
      d = &forward_dynamics_derivatives(model, data, rk.stage_q, rk.stage_v, ws.tau, constraints,
                                        gains);
      rk.slope.head(nv) = rk.stage_v;
      rk.dslope_dx.topRows(nv) = rk.dstage_dx.bottomRows(nv);
      rk.dslope_dx.bottomRows(nv).noalias() = d->ddq_dq * rk.dstage_dx.topRows(nv);
      rk.dslope_dx.bottomRows(nv).noalias() += d->ddq_dv * rk.dstage_dx.bottomRows(nv);
      dslope_du.topRows(nv) = dstage_du.bottomRows(nv);
      dslope_du.bottomRows(nv).noalias() = d->ddq_dq * dstage_du.topRows(nv);
      dslope_du.bottomRows(nv).noalias() += d->ddq_dv * dstage_du.bottomRows(nv);
    }
    rk.slope.tail(nv) = data.ddq;
    for (Eigen::Index c = 0; c < nu; ++c) {
      dslope_du.col(c).tail(nv) += d->ddq_dtau.col(actuated_dofs[c]);
    }
    rk.slopes += kWeights[i] * rk.slope;
    rk.dslopes_dx += kWeights[i] * rk.dslope_dx;
    dslopes_du += kWeights[i] * dslope_du;
  }

  // x⁺ = x ⊕ dt Σ b_i k_i.
  ws.step = dt * rk.slopes.head(nv);
  integrate(model, q, ws.step, out.q_next);
  out.v_next = v + dt * rk.slopes.tail(nv);
  integrate_jacobians(model, ws.step, ws.integrate_dq, ws.integrate_dstep);
  integrate_rows(model, ws, dt, rk.dslopes_dx, dslopes_du, out.fx, out.fu);
}

}  // namespace torqued
