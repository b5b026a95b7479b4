// Impulse-dynamics derivatives (see the header for the system). The steps:
//   v⁺, Λ and K by impulse_dynamics();  M⁻¹ (minverse);  G = M⁻¹ Kᵀ;  A⁺ = (K G)⁺
//   RNEA derivatives at (q, 0, w = v⁺ + e v⁻) without gravity: c_q (constraint_rates.hpp)
//   RNEA derivatives at (q, 0, Δv) with Λ on the bodies, without gravity: ID_q, plus the loops'
//   turning forces
//   ∂Λ/∂q = A⁺ (Gᵀ ID_q − c_q),  ∂v⁺/∂q = −M⁻¹ ID_q + G ∂Λ/∂q
//   ∂Λ/∂v⁻ = −(1 + e) A⁺ K,      ∂v⁺/∂v⁻ = 1 + G ∂Λ/∂v⁻
// The products are dense, O(nv³): an impact is one knot of a horizon's many, and the tree-sparse
// kernels of the acceleration level (constrained_dynamics_derivatives.cpp) would save little at
// legged robots' sizes.
#include "engine/algorithms/impulse_dynamics_derivatives.hpp"

#include <cassert>

#include "engine/algorithms/constraint_rates.hpp"
#include "engine/algorithms/impulse_dynamics.hpp"

namespace torqued {

const ImpulseDerivativesWorkspace& impulse_dynamics_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v_minus,
    std::span<const BilateralConstraint> contacts, double restitution,
    const ConstraintTolerance& tolerance) {
  assert(fits(model, data, q, v_minus) && restitution >= 0.0);
  const int m = constraint_rows(model, contacts);
  const int nv = model.nv;
  data.bind(model, kImpulseDynamicsDerivativesWorkspaces);
  ConstraintWorkspace& cw = data.workspace<ConstraintWorkspace>();
  ConstrainedDerivativesWorkspace& cd = data.workspace<ConstrainedDerivativesWorkspace>();
  ImpulseDerivativesWorkspace& w = data.workspace<ImpulseDerivativesWorkspace>();
  cw.reserve_rows(model, m);
  cd.reserve_rows(model, m);
  w.reserve_rows(model, m);
  w.velocity = v_minus;
  w.dvelocity_dq.setZero();
  w.dvelocity_dv.setIdentity();
  if (m == 0) return w;

  // v⁺ and Λ by impulse_dynamics() itself, so that a step with its Jacobians and one without
  // see the same impact to the last bit; it leaves K in the ConstraintWorkspace.
  impulse_dynamics(model, data, q, v_minus, contacts, restitution, tolerance, w.velocity,
                   w.impulses.head(m));
  const auto jacobian = cw.jacobian.topRows(m);
  const RowMatrixXd& minv = minverse(model, data, q);  // symmetric: rows are columns
  InterruptionPoll poll(data.interruption);
  operational_space_inverse(model, data, contacts, minv);
  const auto minv_kt = cd.minv_kt.leftCols(m);
  const auto inverse = cd.system_inverse.topLeftCorner(m, m);
  const auto impulses = w.impulses.head(m);
  w.jump = w.velocity - v_minus;
  w.held = w.velocity + restitution * v_minus;
  w.rest.setZero();
  poll.add(2.0 * nv * m * (nv + m));

  // c_q = ∂(K(q) w)/∂q: the residual's rate at (q, 0, w), where γ and the gains' terms vanish.
  const Vec3 no_gravity = Vec3::Zero();
  const RneaDerivativesWorkspace& d =
      rnea_derivatives(model, data, q, w.rest, w.held, {}, no_gravity);
  auto dc_dq = cd.residual_dq.topRows(m);
  auto dc_dv = cd.residual_dv.topRows(m);  // ∂c/∂q̇ at q̇ = 0: not a term of the impact
  dc_dq.setZero();
  dc_dv.setZero();
  add_constraint_residual_rates(model, data, d, contacts, {}, no_gravity, dc_dq, dc_dv);

  // ID_q with Λ on the bodies, and the loops' turning forces.
  constraint_body_forces(model, data, contacts, impulses, cd.body_forces);
  rnea_derivatives(model, data, q, w.rest, w.jump, cd.body_forces, no_gravity);
  w.impact_dq = d.dtau_dq;
  if (loop_force_rates(model, data, contacts, impulses, cd.loop_forces_dq)) {
    w.impact_dq += cd.loop_forces_dq;
  }

  auto projected = w.projected_dq.topRows(m);
  projected.noalias() = minv_kt.transpose() * w.impact_dq;
  projected -= dc_dq;
  auto dimpulses_dq = w.dimpulses_dq.topRows(m);
  auto dimpulses_dv = w.dimpulses_dv.topRows(m);
  dimpulses_dq.noalias() = inverse * projected;
  dimpulses_dv.noalias() = (-(1.0 + restitution)) * inverse * jacobian;
  w.dvelocity_dq.noalias() = -minv * w.impact_dq;
  w.dvelocity_dq.noalias() += minv_kt * dimpulses_dq;
  w.dvelocity_dv.noalias() += minv_kt * dimpulses_dv;
  poll.add(2.0 * nv * nv * (nv + 2.0 * m) + 4.0 * m * m * nv);
  return w;
}

}  // namespace torqued
