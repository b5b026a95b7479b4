// Closed-chain inverse dynamics (Kim 2012, §3.1; see the header for the equations). The passive
// and actuated columns of K are gathered once; the Gram matrix K_pᵀ K_p is factored with the
// rank-revealing LDLᵀ, which both detects undetermined passive DOFs and serves the three solves
// with it (q̈_p, λ₀ and the projector P = I − K_p (K_pᵀ K_p)⁻¹ K_pᵀ). K_a is then overwritten by
// E = P K_a, and since K_pᵀ s = 0 for s in the range of P, K_aᵀ s = Eᵀ s.
#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"

#include <cassert>
#include <string>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/pivoted_ldlt.hpp"
#include "engine/algorithms/rnea.hpp"

namespace torqued {

ConstraintResidual closed_chain_inverse_dynamics(
    const Model& model, Data& data, const ConstVectorRef& q, const ConstVectorRef& v,
    const ConstVectorRef& ddq, const ConstVectorRef& tau, std::span<const DofInput> input,
    std::span<const BilateralConstraint> constraints, const BaumgarteGains& gains,
    Eigen::Ref<Eigen::VectorXd> ddq_out, Eigen::Ref<Eigen::VectorXd> tau_out,
    Eigen::Ref<Eigen::VectorXd> lambda) {
  const int m = constraint_rows(model, constraints);
  const int nv = model.nv;
  assert(fits(model, data, q, v, ddq, tau) && static_cast<int>(input.size()) == nv &&
         lambda.size() == m);
  data.bind(model, kClosedChainInverseDynamicsWorkspaces);
  ConstraintWorkspace& w = data.workspace<ConstraintWorkspace>();
  ClosedChainWorkspace& cc = data.workspace<ClosedChainWorkspace>();
  w.reserve_rows(model, m);
  constraint_kinematics(model, data, q, v);
  auto jacobian = w.jacobian.topRows(m);
  auto bias = w.bias.head(m);
  constraint_jacobian(model, data, constraints, gains, jacobian, bias);

  int np = 0;
  for (int k = 0; k < nv; ++k) {
    if (input[k] == DofInput::kForce) cc.dof_order[np++] = k;
  }
  const int na = nv - np;
  for (int k = 0, a = np; k < nv; ++k) {
    if (input[k] == DofInput::kAcceleration) cc.dof_order[a++] = k;
  }
  auto passive = w.passive_columns.topLeftCorner(m, np);
  auto actuated = w.actuated_columns.topLeftCorner(m, na);
  for (int j = 0; j < np; ++j) passive.col(j) = jacobian.col(cc.dof_order[j]);
  for (int j = 0; j < na; ++j) actuated.col(j) = jacobian.col(cc.dof_order[np + j]);

  auto gram = cc.passive_gram.topLeftCorner(np, np);
  gram.noalias() = passive.transpose() * passive;
  auto permutation = cc.passive_permutation.head(np);
  const int rank = pivoted_ldlt_factorize(gram, permutation);
  if (rank < np) {
    const int dof = cc.dof_order[permutation[rank]];
    throw SingularSystemError("closed-chain inverse dynamics: the acceleration of joint '" +
                              model.joint_names[model.body_of_v[dof]] +
                              "' is not determined by the actuated joints and the constraints");
  }
  const auto solve_gram = [&](Eigen::Ref<Eigen::VectorXd> x) {
    pivoted_ldlt_solve(gram, permutation, np, x, w.scratch, cc.dof_work);
  };

  // Passive accelerations: least squares on K_p q̈_p = k − K_a q̈_a, exact when q̈_a is consistent.
  auto rhs = w.rhs.head(m);
  rhs = bias;
  for (int j = 0; j < na; ++j) rhs -= actuated.col(j) * ddq[cc.dof_order[np + j]];
  const double residual_scale = constraint_scale(bias, rhs);
  auto x = w.dof_work.head(np);
  x.noalias() = passive.transpose() * rhs;
  solve_gram(x);
  for (int j = 0; j < na; ++j) ddq_out[cc.dof_order[np + j]] = ddq[cc.dof_order[np + j]];
  for (int j = 0; j < np; ++j) ddq_out[cc.dof_order[j]] = x[j];

  const Eigen::VectorXd& tau_open = rnea(model, data, q, v, ddq_out);
  for (int j = 0; j < np; ++j) {
    const int k = cc.dof_order[j];
    x[j] = tau_open[k] - tau[k];
    tau_out[k] = tau[k];
  }
  solve_gram(x);
  lambda.noalias() = passive * x;
  auto c = w.dof_work.head(na);
  for (int j = 0; j < na; ++j) c[j] = tau_open[cc.dof_order[np + j]];
  c.noalias() -= actuated.transpose() * lambda;

  // E = P K_a = K_a − K_p (K_pᵀ K_p)⁻¹ K_pᵀ K_a, column by column of (K_pᵀ K_p)⁻¹ K_pᵀ K_a.
  auto reduced = cc.passive_reduced.topLeftCorner(np, na);
  reduced.noalias() = passive.transpose() * actuated;
  for (int j = 0; j < na; ++j) solve_gram(reduced.col(j));

  // P K_a vanishes to rounding when the actuation is exact: rank is judged against K_a's scale.
  const double scale = m > 0 ? actuated.rowwise().squaredNorm().maxCoeff() : 0.0;
  actuated.noalias() -= passive * reduced;
  auto system = w.system.topLeftCorner(m, m);
  system.noalias() = actuated * actuated.transpose();
  auto s = w.rhs.head(m);
  s.noalias() = actuated * c;
  auto system_permutation = w.permutation.head(m);
  const int system_rank = pivoted_ldlt_factorize(system, system_permutation, scale);
  pivoted_ldlt_solve(system, system_permutation, system_rank, s, w.scratch, w.work);
  lambda += s;
  c.noalias() -= actuated.transpose() * s;
  for (int j = 0; j < na; ++j) tau_out[cc.dof_order[np + j]] = c[j];
  const ConstraintResidual residual{constraint_residual(jacobian, bias, ddq_out, w.rhs.head(m)),
                                    residual_scale};
  check_constraint_residual(residual, gains.tolerance);
  return residual;
}

}  // namespace torqued
