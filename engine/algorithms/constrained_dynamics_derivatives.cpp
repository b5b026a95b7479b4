// Constrained-dynamics derivatives (see the header for the system). The steps:
//   K, k at (q, q̇);  ABA: q̈₀ and its factors;  M⁻¹ from them;  G = M⁻¹ Kᵀ;  Λ = (K G)⁺
//   λ = Λ (k − K q̈₀),  q̈ = q̈₀ + G λ                    (constrained_dynamics()'s solution)
//   ∂λ/∂τ = −Λ Gᵀ,  P = ∂q̈/∂τ = M⁻¹ + G ∂λ/∂τ
//   RNEA derivatives at (q, q̇, q̈) with λ on the bodies: ID_q, ID_q̇, and ψ, φ, χ per DOF
//   c_q, c_q̇ per constraint
//   ∂q̈/∂x = −P ID_x − G Λ c_x,  ∂λ/∂x = −(∂λ/∂τ) ID_x − Λ c_x
// (the header's products rearranged with K Y_x = −Gᵀ ID_x, constrained_solution_rates()): P ID_x
// by the tree-sparse kernel of the ABA derivatives, (∂λ/∂τ) ID_x over the same sparsity, so that
// the dense work is O(nv² rows) and no product with Y is formed.
// c_x and the loops' turning forces: constraint_rates.hpp.
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"

#include <cassert>

#include "engine/algorithms/constraint_rates.hpp"

namespace torqued {

const ConstrainedDerivativesWorkspace& constrained_dynamics_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& tau, std::span<const BilateralConstraint> constraints,
    const BaumgarteGains& gains, const ImpactOperationalSpace* impact) {
  assert(fits(model, data, q, v, tau));
  const int m = constraint_rows(model, constraints);
  const int nv = model.nv;
  data.bind(model, kConstrainedDynamicsDerivativesWorkspaces);
  ConstraintWorkspace& cw = data.workspace<ConstraintWorkspace>();
  ConstrainedDerivativesWorkspace& w = data.workspace<ConstrainedDerivativesWorkspace>();
  if (m == 0) {
    aba_derivatives(model, data, q, v, tau);  // nothing holds the tree
    return w;
  }
  AbaDerivativesWorkspace& out = data.workspace<AbaDerivativesWorkspace>();
  cw.reserve_rows(model, m);
  w.reserve_rows(model, m);
  auto jacobian = cw.jacobian.topRows(m);
  auto bias = cw.bias.head(m);
  constraint_jacobian(model, data, q, v, constraints, gains, jacobian, bias);

  // The constrained solution from the free one and M⁻¹. After an impact, M⁻¹, G and Λ are the
  // impact's, and the free solution is M⁻¹ (τ − b) with b left by constraint_jacobian().
  InterruptionPoll poll(data.interruption);
  if (impact == nullptr) {
    aba(model, data, q, v, tau);
    operational_space_inverse(model, data, constraints, minverse_from_factors(model, data));
  } else {
    cw.dof_work = tau - data.tau;
    data.ddq.noalias() = impact->minv * cw.dof_work;
    poll.add(2.0 * nv * nv);
  }
  const auto minv_kt = w.minv_kt.leftCols(m);
  const auto inverse = w.system_inverse.topLeftCorner(m, m);
  auto lambda = w.lambda.head(m);
  cw.rhs.head(m) = bias;
  cw.rhs.head(m).noalias() -= jacobian * data.ddq;
  const double scale = constraint_scale(bias, cw.rhs.head(m));
  lambda.noalias() = inverse * cw.rhs.head(m);
  data.ddq.noalias() += minv_kt * lambda;
  check_constraint_residual({constraint_residual(jacobian, bias, data.ddq, cw.rhs.head(m)), scale},
                            gains.tolerance);
  // ∂λ/∂τ = −Λ Gᵀ and ∂q̈/∂τ = M⁻¹ + G ∂λ/∂τ, the constrained inverse inertia P.
  if (impact == nullptr) {
    constrained_inverse_inertia(w, m, data.workspace<MassInverseWorkspace>().Minv, out.ddq_dtau,
                                poll);
  } else {
    out.ddq_dtau = impact->inverse_inertia;
  }
  poll.add(2.0 * nv * m * (nv + 2.0 * m));

  // The RNEA derivatives with λ on the bodies.
  constraint_body_forces(model, data, constraints, lambda, w.body_forces);
  const RneaDerivativesWorkspace& d = rnea_derivatives(model, data, q, v, data.ddq, w.body_forces);

  // c_q, c_q̇ at the kinematics of the RNEA derivatives, and the loops' turning forces.
  auto dc_dq = w.residual_dq.topRows(m);
  auto dc_dv = w.residual_dv.topRows(m);
  dc_dq.setZero();
  dc_dv.setZero();
  add_constraint_residual_rates(model, data, d, constraints, gains, model.gravity, dc_dq, dc_dv);
  const bool turning_forces = loop_force_rates(model, data, constraints, lambda, w.loop_forces_dq);

  // ∂q̈/∂x = −P ID_x − G Λ c_x and ∂λ/∂x = −(∂λ/∂τ) ID_x − Λ c_x for x = q, q̇.
  constrained_solution_rates(model, data, constraints, w, out.ddq_dtau, d.dtau_dq, d.dtau_dv,
                             turning_forces, out.ddq_dq, out.ddq_dv, w.dlambda_dq.topRows(m),
                             w.dlambda_dv.topRows(m), poll);
  return w;
}

const AbaDerivativesWorkspace& forward_dynamics_derivatives(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& tau, std::span<const BilateralConstraint> constraints,
    const BaumgarteGains& gains, const ImpactOperationalSpace* impact) {
  if (constraints.empty() && model.loop_closures.empty()) {
    return aba_derivatives(model, data, q, v, tau);
  }
  constrained_dynamics_derivatives(model, data, q, v, tau, constraints, gains, impact);
  return data.workspace<AbaDerivativesWorkspace>();
}

}  // namespace torqued
