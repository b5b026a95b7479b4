// Impulse-dynamics derivatives (see the header for the system), as the constrained-dynamics
// derivatives are computed (constrained_solution_rates(), constraint_rates.hpp), the impact being
// a constrained solution y = v⁺ whose inverse dynamics ID = M Δv − Kᵀ Λ has the rates ID_q and
// ID_{v⁻} = −M, and whose residual c = K (v⁺ + e v⁻) the rates c_q and c_{v⁻} = e K:
//   v⁺, Λ and K by impulse_dynamics();  M⁻¹ (minverse);  G = M⁻¹ Kᵀ;  A⁺ = (K G)⁺
//   ∂Λ/∂τ = −A⁺ Gᵀ,  P = M⁻¹ + G ∂Λ/∂τ (v⁺'s change per generalized impulse)
//   RNEA derivatives at (q, 0, w = v⁺ + e v⁻) without gravity: c_q (constraint_rates.hpp)
//   RNEA derivatives at (q, 0, Δv) with Λ on the bodies, without gravity: ID_q, plus the loops'
//   turning forces
//   ∂v⁺/∂x = −P ID_x − G A⁺ c_x,  ∂Λ/∂x = −(∂Λ/∂τ) ID_x − A⁺ c_x    for x = q, v⁻
// which for x = v⁻ is the header's 1 − (1 + e) G A⁺ K and −(1 + e) A⁺ K (P M = 1 − G A⁺ K). P ID_x
// goes through the tree-sparse kernel (M has the DOF tree's sparsity too): the dense work is
// O(nv² rows), as at the acceleration level.
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
  // see the same impact to the last bit; it leaves K in the ConstraintWorkspace and M in the
  // MassMatrixWorkspace.
  impulse_dynamics(model, data, q, v_minus, contacts, restitution, tolerance, w.velocity,
                   w.impulses.head(m));
  const auto jacobian = cw.jacobian.topRows(m);
  const Eigen::MatrixXd& mass = data.workspace<MassMatrixWorkspace>().M;
  const RowMatrixXd& minv = minverse(model, data, q);  // symmetric: rows are columns
  InterruptionPoll poll(data.interruption);
  operational_space_inverse(model, data, contacts, minv);
  const auto minv_kt = cd.minv_kt.leftCols(m);
  const auto inverse = cd.system_inverse.topLeftCorner(m, m);
  const auto impulses = w.impulses.head(m);
  auto dimpulses_dtau = cd.dlambda_dtau.topRows(m);
  dimpulses_dtau.noalias() = -inverse * minv_kt.transpose();
  w.inverse_inertia = minv;
  w.inverse_inertia.noalias() += minv_kt * dimpulses_dtau;
  w.impact_dv = -mass;
  w.jump = w.velocity - v_minus;
  w.held = w.velocity + restitution * v_minus;
  w.rest.setZero();
  poll.add(2.0 * nv * m * (2.0 * nv + m));

  // c_q = ∂(K(q) w)/∂q: the residual's rate at (q, 0, w), where γ and the gains' terms vanish;
  // its rate along q̇ at q̇ = 0 is not a term of the impact, c_{v⁻} = e K is.
  const Vec3 no_gravity = Vec3::Zero();
  const RneaDerivativesWorkspace& d =
      rnea_derivatives(model, data, q, w.rest, w.held, {}, no_gravity);
  auto dc_dq = cd.residual_dq.topRows(m);
  auto dc_dv = cd.residual_dv.topRows(m);
  dc_dq.setZero();
  dc_dv.setZero();
  add_constraint_residual_rates(model, data, d, contacts, {}, no_gravity, dc_dq, dc_dv);
  dc_dv = restitution * jacobian;

  // ID_q with Λ on the bodies, and the loops' turning forces.
  constraint_body_forces(model, data, contacts, impulses, cd.body_forces);
  rnea_derivatives(model, data, q, w.rest, w.jump, cd.body_forces, no_gravity);
  const bool turning_forces = loop_force_rates(model, data, contacts, impulses, cd.loop_forces_dq);
  constrained_solution_rates(model, data, contacts, cd, w.inverse_inertia, d.dtau_dq, w.impact_dv,
                             turning_forces, w.dvelocity_dq, w.dvelocity_dv,
                             w.dimpulses_dq.topRows(m), w.dimpulses_dv.topRows(m), poll);
  return w;
}

}  // namespace torqued
