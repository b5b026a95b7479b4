// The semi-implicit and explicit Euler steps and their Jacobians (see euler_step_derivatives.hpp).
#include "engine/algorithms/euler_step_derivatives.hpp"

#include <cassert>

#include "engine/model/configuration.hpp"

namespace torqued {

void euler_step_derivatives(const Model& model, Data& data, const ConstVectorRef& q,
                            const ConstVectorRef& v, const ConstVectorRef& u, double dt,
                            EulerStep kind, std::span<const int> actuated_dofs,
                            DiscreteStepOutput out,
                            std::span<const BilateralConstraint> constraints,
                            const BaumgarteGains& gains) {
  const int nv = model.nv;
  assert(u.size() == static_cast<Eigen::Index>(actuated_dofs.size()));
  // Only the v⁺ rows, or all of them.
  const bool velocity_rows = out.fx.rows() == nv;
  assert((velocity_rows || out.fx.rows() == 2 * nv) && out.fx.cols() == 2 * nv);
  assert(out.fu.rows() == out.fx.rows() && out.fu.cols() == u.size());
  data.bind(model, kEulerStepWorkspaces);
  DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
  actuate(actuated_dofs, u, ws.tau);
  const AbaDerivativesWorkspace& d =
      forward_dynamics_derivatives(model, data, q, v, ws.tau, constraints, gains);

  // v⁺ and its rows.
  out.v_next = v + dt * data.ddq;
  out.fx.bottomLeftCorner(nv, nv) = dt * d.ddq_dq;
  out.fx.bottomRightCorner(nv, nv) = dt * d.ddq_dv;
  out.fx.bottomRightCorner(nv, nv).diagonal().array() += 1.0;
  for (std::size_t c = 0; c < actuated_dofs.size(); ++c) {
    out.fu.col(static_cast<Eigen::Index>(c)).tail(nv) = dt * d.ddq_dtau.col(actuated_dofs[c]);
  }

  // q⁺ and its rows, joint by joint. The velocity over the step is v⁺ or q̇.
  const bool semi_implicit = kind == EulerStep::kSemiImplicit;
  if (semi_implicit) {
    ws.step = dt * out.v_next;
  } else {
    ws.step = dt * v;
  }
  integrate(model, q, ws.step, out.q_next);
  integrate_jacobians(model, ws.step, ws.integrate_dq, ws.integrate_dstep);
  if (velocity_rows) return;
  for_each_joint_block(model, [&]<int kDofs>(int at) {
    const Eigen::Matrix<double, kDofs, kDofs> jw =
        dt * ws.integrate_dstep.block<kDofs, kDofs>(at, at);
    if (semi_implicit) {
      // dt J_w times the v⁺ rows, and J_q on the diagonal.
      out.fx.middleRows<kDofs>(at).noalias() = jw * out.fx.middleRows<kDofs>(nv + at);
      out.fx.block<kDofs, kDofs>(at, at) += ws.integrate_dq.block<kDofs, kDofs>(at, at);
      out.fu.middleRows<kDofs>(at).noalias() = jw * out.fu.middleRows<kDofs>(nv + at);
    } else {
      // J_q, dt J_w, and nothing from u.
      out.fx.middleRows<kDofs>(at).setZero();
      out.fx.block<kDofs, kDofs>(at, at) = ws.integrate_dq.block<kDofs, kDofs>(at, at);
      out.fx.block<kDofs, kDofs>(at, nv + at) = jw;
      out.fu.middleRows<kDofs>(at).setZero();
    }
  });
}

std::size_t integration_block_values(const Model& model) {
  std::size_t values = 0;
  for (int i = 1; i < model.nbodies(); ++i) {
    const auto dofs = static_cast<std::size_t>(joint_nv(model.joints[i].type));
    if (dofs > 1) values += dofs * dofs;
  }
  return values;
}

void write_integration_blocks(const Model& model, const Data& data, std::span<double> dq,
                              std::span<double> dw) {
  assert(dq.size() == integration_block_values(model) && dw.size() == dq.size());
  const DiscreteStepWorkspace& ws = data.workspace<DiscreteStepWorkspace>();
  std::size_t at = 0;
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int dofs = joint_nv(joint.type);
    if (dofs < 2) continue;
    Eigen::Map<RowMajorMatrix>(dq.data() + at, dofs, dofs) =
        ws.integrate_dq.block(joint.idx_v, joint.idx_v, dofs, dofs);
    Eigen::Map<RowMajorMatrix>(dw.data() + at, dofs, dofs) =
        ws.integrate_dstep.block(joint.idx_v, joint.idx_v, dofs, dofs);
    at += static_cast<std::size_t>(dofs) * static_cast<std::size_t>(dofs);
  }
}

}  // namespace torqued
