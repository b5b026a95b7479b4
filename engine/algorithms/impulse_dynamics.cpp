// Impulse dynamics at a touchdown (see the header):
//   K at q (constraint_kinematics_at_rest, constraint_jacobian),  M = crba(q) = Lᵀ D L
//   b = −(1 + e) K v⁻ (the target −e K v⁻ less K v⁻, the free solution's)
//   Λ = (K M⁻¹ Kᵀ)⁺ b,   v⁺ = v⁻ + M⁻¹ Kᵀ Λ          (range_space_correction())
//   residual ‖K v⁺ + e K v⁻‖∞ against max(‖e K v⁻‖∞, ‖K v⁻‖∞)
#include "engine/algorithms/impulse_dynamics.hpp"

#include <cassert>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/ltdl.hpp"

namespace torqued {

ConstraintResidual impulse_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                    const ConstVectorRef& v_minus,
                                    std::span<const BilateralConstraint> contacts,
                                    double restitution, const ConstraintTolerance& tolerance,
                                    Eigen::Ref<Eigen::VectorXd> v_plus,
                                    Eigen::Ref<Eigen::VectorXd> impulses) {
  assert(fits(model, data, q, v_minus) && v_plus.size() == model.nv &&
         impulses.size() == constraint_rows(model, contacts));
  assert(restitution >= 0.0);
  // K at q from the placements alone: an impact has no acceleration level, so no k and no RNEA.
  const int m = constraint_rows(model, contacts);
  data.bind(model, kImpulseDynamicsWorkspaces);
  ConstraintWorkspace& w = data.workspace<ConstraintWorkspace>();
  w.reserve_rows(model, m);
  constraint_kinematics_at_rest(model, data, q);
  constraint_jacobian(model, data, contacts, {}, w.jacobian.topRows(m), w.bias.head(m));
  const auto jacobian = w.jacobian.topRows(m);
  auto target = w.bias.head(m);
  v_plus = v_minus;
  if (m == 0) return {};

  // The target velocity of the contacts, −e K v⁻, and b = target − K v⁻.
  target.noalias() = -restitution * (jacobian * v_minus);
  impulses = target;
  impulses.noalias() -= jacobian * v_minus;
  const double scale = constraint_scale(target, impulses);
  ltdl_factorize(model, data, crba(model, data, q));
  range_space_correction(model, data, m, v_plus, impulses);
  const ConstraintResidual residual{constraint_residual(jacobian, target, v_plus, w.work.head(m)),
                                    scale};
  check_constraint_residual(residual, tolerance);
  return residual;
}

}  // namespace torqued
