// Impulse-dynamics derivatives (see the header for the system), as the constrained-dynamics
// derivatives are computed (constrained_solution_rates(), constraint_rates.hpp), the impact being
// a constrained solution y = v⁺ whose inverse dynamics ID = M Δv − Kᵀ Λ has the rates ID_q and
// ID_{v⁻} = −M, and whose residual c = K (v⁺ + e v⁻) the rates c_q and c_{v⁻} = e K:
//   v⁺, Λ and K by impulse_dynamics();  M⁻¹ (minverse);  G = M⁻¹ Kᵀ;  A⁺ = (K G)⁺
//   ∂Λ/∂τ = −A⁺ Gᵀ,  P = M⁻¹ + G ∂Λ/∂τ (v⁺'s change per generalized impulse)
//   the RNEA derivatives' forward pass at (q, 0, w = v⁺ + e v⁻) without gravity: c_q
//   (constraint_rates.hpp)
//   RNEA derivatives along q at (q, 0, Δv) with Λ on the bodies, without gravity: ID_q, plus the
//   loops' turning forces
//   ∂v⁺/∂q = −P ID_q − G A⁺ c_q,  ∂Λ/∂q = −(∂Λ/∂τ) ID_q − A⁺ c_q
// P ID_q goes through the tree-sparse kernel: the dense work is O(nv² rows), as at the
// acceleration level. Along v⁻ the same formulas reduce (P M = 1 − G A⁺ K, Gᵀ M = K) to the
// header's closed forms ∂Λ/∂v⁻ = −(1 + e) A⁺ K and ∂v⁺/∂v⁻ = 1 + G ∂Λ/∂v⁻, which cost O(nv² rows)
// without a pass over the tree.
#include "engine/algorithms/impulse_dynamics_derivatives.hpp"

#include <cassert>

#include "engine/algorithms/constraint_rates.hpp"
#include "engine/algorithms/impulse_dynamics.hpp"
#include "engine/algorithms/tree_sparse_product.hpp"

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
  const RowMatrixXd& minv = minverse(model, data, q);  // symmetric: rows are columns
  InterruptionPoll poll(data.interruption);
  operational_space_inverse(model, data, contacts, minv);
  const auto impulses = w.impulses.head(m);
  constrained_inverse_inertia(cd, m, minv, w.inverse_inertia, poll);
  w.jump = w.velocity - v_minus;
  w.held = w.velocity + restitution * v_minus;
  w.rest.setZero();
  poll.add(2.0 * nv * m * (nv + m));

  // c_q = ∂(K(q) w)/∂q: the residual's rate at (q, 0, w), where γ and the gains' terms vanish
  // (its rate along q̇ at q̇ = 0, in residual_dv, is not a term of the impact).
  const Vec3 no_gravity = Vec3::Zero();
  const RneaDerivativesWorkspace& d =
      forward_kinematics_derivatives(model, data, q, w.rest, w.held, no_gravity);
  auto dc_dq = cd.residual_dq.topRows(m);
  auto dc_dv = cd.residual_dv.topRows(m);
  dc_dq.setZero();
  dc_dv.setZero();
  add_constraint_residual_rates(model, data, d, contacts, {}, no_gravity, dc_dq, dc_dv);

  // ID_q with Λ on the bodies, and the loops' turning forces.
  constraint_body_forces(model, data, contacts, impulses, cd.body_forces);
  rnea_configuration_derivatives(model, data, q, w.rest, w.jump, cd.body_forces, no_gravity);
  const bool turning_forces = loop_force_rates(model, data, contacts, impulses, cd.loop_forces_dq);
  constrained_solution_rates(model, data, contacts, cd, w.inverse_inertia, d.dtau_dq,
                             turning_forces, w.dvelocity_dq, w.dimpulses_dq.topRows(m), poll);

  // Along v⁻ in closed form: ∂Λ/∂v⁻ = −(1 + e) A⁺ K, and ∂v⁺/∂v⁻ = 1 + G ∂Λ/∂v⁻ (G by the
  // vectorized dense kernel, negated).
  auto dimpulses_dv = w.dimpulses_dv.topRows(m);
  dimpulses_dv.noalias() = cd.system_inverse.topLeftCorner(m, m) * jacobian;
  dimpulses_dv *= -(1.0 + restitution);
  poll.add(2.0 * m * m * nv);
  if (!tree_sparse::dense_negated_product(nv, m, nv, cd.minv_kt.data(), dimpulses_dv.data(),
                                          static_cast<int>(w.dimpulses_dv.rows()),
                                          w.dvelocity_dv.data(), poll)) {
    throw Interrupted();
  }
  w.dvelocity_dv = -w.dvelocity_dv;
  w.dvelocity_dv.diagonal().array() += 1.0;
  return w;
}

}  // namespace torqued
