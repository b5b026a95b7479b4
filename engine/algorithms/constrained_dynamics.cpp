// Constrained forward dynamics in the range space (see the header):
//   C = rnea(q, q̇, 0) (with the constraint kinematics),  K, k,  M = crba(q) = Lᵀ D L
//   q̈₀ = M⁻¹ (τ − C)
//   Z = D^-1/2 L⁻ᵀ Kᵀ,  Λ⁻¹ = Zᵀ Z = K M⁻¹ Kᵀ
//   λ = (Λ⁻¹)⁺ (k − K q̈₀)     (pivoted LDLᵀ: the minimum-norm λ)
//   q̈ = q̈₀ + L⁻¹ D^-1/2 Z λ = q̈₀ + M⁻¹ Kᵀ λ
//   residual ‖K q̈ − k‖∞ against max(‖k‖∞, ‖K q̈₀‖∞)
// Column r of Kᵀ is non-zero only at the DOFs that move the constraint's frames, and L⁻ᵀ only
// carries entries to ancestors, so the columns of Z stay as sparse as those of Kᵀ.
#include "engine/algorithms/constrained_dynamics.hpp"

#include <cassert>
#include <cmath>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/ltdl.hpp"
#include "engine/algorithms/pivoted_ldlt.hpp"

namespace torqued {

void range_space_correction(const Model& model, Data& data, int rows, Eigen::Ref<Eigen::VectorXd> x,
                            Eigen::Ref<Eigen::VectorXd> lambda) {
  const int nv = model.nv;
  ConstraintWorkspace& w = data.workspace<ConstraintWorkspace>();
  const auto jacobian = w.jacobian.topRows(rows);
  for (int i = 0; i < nv; ++i)
    w.dof_scale[i] = 1.0 / std::sqrt(data.workspace<MassFactorWorkspace>().ltdl(i, i));
  auto gain = w.gain.leftCols(rows);
  for (int r = 0; r < rows; ++r) {
    auto column = gain.col(r);
    column = jacobian.row(r).transpose();
    ltdl_solve_transposed_factor(data, column);
    column.array() *= w.dof_scale.array();
  }
  auto system = w.system.topLeftCorner(rows, rows);
  system.noalias() = gain.transpose() * gain;
  auto permutation = w.permutation.head(rows);
  const int rank = pivoted_ldlt_factorize(system, permutation);
  pivoted_ldlt_solve(system, permutation, rank, lambda, w.scratch, w.work);

  Eigen::VectorXd& correction = w.dof_work;
  correction.noalias() = gain * lambda;
  correction.array() *= w.dof_scale.array();
  ltdl_solve_factor(data, correction);
  x += correction;
}

int bind_constraint_system(const Model& model, Data& data, const ConstVectorRef& q,
                           const ConstVectorRef& v,
                           std::span<const BilateralConstraint> constraints,
                           const BaumgarteGains& gains) {
  const int m = constraint_rows(model, constraints);
  data.bind(model, kConstrainedDynamicsWorkspaces);
  ConstraintWorkspace& w = data.workspace<ConstraintWorkspace>();
  w.reserve_rows(model, m);
  constraint_kinematics(model, data, q, v);
  constraint_jacobian(model, data, constraints, gains, w.jacobian.topRows(m), w.bias.head(m));
  return m;
}

ConstraintResidual constrained_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                        const ConstVectorRef& v, const ConstVectorRef& tau,
                                        std::span<const BilateralConstraint> constraints,
                                        const BaumgarteGains& gains,
                                        Eigen::Ref<Eigen::VectorXd> ddq,
                                        Eigen::Ref<Eigen::VectorXd> lambda) {
  assert(fits(model, data, q, v, tau) && ddq.size() == model.nv &&
         lambda.size() == constraint_rows(model, constraints));
  const int m = bind_constraint_system(model, data, q, v, constraints, gains);
  ConstraintWorkspace& w = data.workspace<ConstraintWorkspace>();
  const auto jacobian = w.jacobian.topRows(m);
  const auto bias = w.bias.head(m);

  ddq = tau - data.tau;
  ltdl_factorize(model, data, crba(model, data, q));
  ltdl_solve(data, ddq);
  if (m == 0) return {};

  lambda = bias;
  lambda.noalias() -= jacobian * ddq;
  const double scale = constraint_scale(bias, lambda);
  range_space_correction(model, data, m, ddq, lambda);
  // In `work`, the solve's scratch: `rhs` may hold λ (step()'s unreturned multipliers).
  const ConstraintResidual residual{constraint_residual(jacobian, bias, ddq, w.work.head(m)),
                                    scale};
  check_constraint_residual(residual, gains.tolerance);
  return residual;
}

}  // namespace torqued
