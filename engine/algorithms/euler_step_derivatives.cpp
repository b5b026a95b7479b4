// The semi-implicit Euler step and its Jacobians (see euler_step_derivatives.hpp).
#include "engine/algorithms/euler_step_derivatives.hpp"

#include <cassert>

#include "engine/model/configuration.hpp"

namespace torqued {
namespace {

// The q⁺ rows of a semi-implicit step for a joint of kDofs DOFs at `at`, from its v⁺ rows: dt J_w
// times them, and J_q on the diagonal.
template <int kDofs>
void semi_implicit_rows(const EulerStepWorkspace& ws, int at, int nv, double dt,
                        EulerStepOutput& out) {
  const Eigen::Matrix<double, kDofs, kDofs> jw =
      dt * ws.integrate_dstep.block<kDofs, kDofs>(at, at);
  out.fx.middleRows<kDofs>(at).noalias() = jw * out.fx.middleRows<kDofs>(nv + at);
  out.fx.block<kDofs, kDofs>(at, at) += ws.integrate_dq.block<kDofs, kDofs>(at, at);
  out.fu.middleRows<kDofs>(at).noalias() = jw * out.fu.middleRows<kDofs>(nv + at);
}

// The q⁺ rows of an explicit step: J_q, dt J_w, and nothing from u.
template <int kDofs>
void explicit_rows(const EulerStepWorkspace& ws, int at, int nv, double dt, EulerStepOutput& out) {
  out.fx.middleRows<kDofs>(at).setZero();
  out.fx.block<kDofs, kDofs>(at, at) = ws.integrate_dq.block<kDofs, kDofs>(at, at);
  out.fx.block<kDofs, kDofs>(at, nv + at) = dt * ws.integrate_dstep.block<kDofs, kDofs>(at, at);
  out.fu.middleRows<kDofs>(at).setZero();
}

template <int kDofs>
void configuration_rows(EulerStep kind, const EulerStepWorkspace& ws, int at, int nv, double dt,
                        EulerStepOutput& out) {
  if (kind == EulerStep::kSemiImplicit) {
    semi_implicit_rows<kDofs>(ws, at, nv, dt, out);
  } else {
    explicit_rows<kDofs>(ws, at, nv, dt, out);
  }
}

}  // namespace

void euler_step_derivatives(const Model& model, Data& data, const ConstVectorRef& q,
                            const ConstVectorRef& v, const ConstVectorRef& u, double dt,
                            EulerStep kind, std::span<const int> actuated_dofs, EulerStepOutput out,
                            std::span<const Force> external_forces) {
  const int nv = model.nv;
  assert(u.size() == static_cast<Eigen::Index>(actuated_dofs.size()));
  assert(out.fx.rows() == 2 * nv && out.fx.cols() == 2 * nv);
  assert(out.fu.rows() == 2 * nv && out.fu.cols() == u.size());
  data.bind(model, kEulerStepWorkspaces);
  EulerStepWorkspace& ws = data.workspace<EulerStepWorkspace>();
  ws.tau.setZero();
  for (std::size_t c = 0; c < actuated_dofs.size(); ++c) ws.tau[actuated_dofs[c]] = u[c];
  const AbaDerivativesWorkspace& d = aba_derivatives(model, data, q, v, ws.tau, external_forces);

  // v⁺ and its rows.
  out.v_next = v + dt * data.ddq;
  out.fx.bottomLeftCorner(nv, nv) = dt * d.ddq_dq;
  out.fx.bottomRightCorner(nv, nv) = dt * d.ddq_dv;
  out.fx.bottomRightCorner(nv, nv).diagonal().array() += 1.0;
  for (std::size_t c = 0; c < actuated_dofs.size(); ++c) {
    out.fu.col(static_cast<Eigen::Index>(c)).tail(nv) = dt * d.ddq_dtau.col(actuated_dofs[c]);
  }

  // q⁺ and its rows, joint by joint. The velocity over the step is v⁺ or q̇.
  if (kind == EulerStep::kSemiImplicit) {
    ws.step = dt * out.v_next;
  } else {
    ws.step = dt * v;
  }
  integrate(model, q, ws.step, out.q_next);
  integrate_jacobians(model, ws.step, ws.integrate_dq, ws.integrate_dstep);
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int at = joint.idx_v;
    switch (joint_nv(joint.type)) {
      case 0:
        break;
      case 3:
        configuration_rows<3>(kind, ws, at, nv, dt, out);
        break;
      case 6:
        configuration_rows<6>(kind, ws, at, nv, dt, out);
        break;
      default:  // 1-DOF joints: J_q = J_w = 1
        configuration_rows<1>(kind, ws, at, nv, dt, out);
        break;
    }
  }
}

}  // namespace torqued
