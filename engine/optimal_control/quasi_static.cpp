// Quasi-static controls (see the header): [u; λ] = [B Kᵀ]⁺ g(q) by a complete orthogonal
// decomposition, whose solve() is the least-squares solution of least norm.
#include "engine/optimal_control/quasi_static.hpp"

#include <Eigen/QR>

#include "engine/algorithms/rnea.hpp"

namespace torqued {

void quasi_static_controls(const Model& model, Data& data, const ConstVectorRef& q,
                           std::span<const int> actuated_dofs,
                           std::span<const BilateralConstraint> contacts,
                           Eigen::Ref<Eigen::VectorXd> u) {
  const int nv = model.nv;
  const int nu = static_cast<int>(actuated_dofs.size());
  const int rows = constraint_rows(model, contacts);
  Eigen::MatrixXd system = Eigen::MatrixXd::Zero(nv, nu + rows);
  for (int c = 0; c < nu; ++c) system(actuated_dofs[static_cast<std::size_t>(c)], c) = 1.0;
  if (rows > 0) {
    Eigen::MatrixXd jacobian(rows, nv);
    Eigen::VectorXd bias(rows);
    const Eigen::VectorXd rest = Eigen::VectorXd::Zero(nv);
    constraint_jacobian(model, data, q, rest, contacts, BaumgarteGains{}, jacobian, bias);
    system.rightCols(rows) = jacobian.transpose();
  }
  const Eigen::VectorXd gravity = generalized_gravity(model, data, q);
  const Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> decomposition(system);
  u = decomposition.solve(gravity).head(nu);
}

}  // namespace torqued
