// Analytic derivatives of forward dynamics (Carpentier & Mansard 2018, §V). Differentiating
// M(q) q̈ + b(q, q̇) = τ at fixed τ gives
//   ∂q̈/∂q = −M⁻¹ ∂τ/∂q,   ∂q̈/∂q̇ = −M⁻¹ ∂τ/∂q̇,   ∂q̈/∂τ = M⁻¹,
// with the RNEA derivatives taken at (q, q̇, q̈). So: ABA for q̈, whose Riccati pass also leaves the
// innovations factors of M, M⁻¹ from those factors (minverse.cpp, Rodriguez & Kreutz 1988), the
// RNEA derivatives at (q, q̇, q̈), and the two products. Column k of ∂τ/∂q (and ∂τ/∂q̇) is non-zero
// only on the DOFs related to k, its ancestors in the DOF tree (data.dof_parent) and its subtree
// k .. dof_subtree_end[k] − 1, so the products only read those columns of M⁻¹
// (tree_sparse_product.hpp).
#include "engine/algorithms/aba_derivatives.hpp"

#include <cassert>

#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/algorithms/tree_sparse_product.hpp"

namespace torqued {

const AbaDerivativesWorkspace& aba_derivatives(const Model& model, Data& data,
                                               const ConstVectorRef& q, const ConstVectorRef& v,
                                               const ConstVectorRef& tau,
                                               std::span<const Force> external_forces) {
  assert(fits(model, data, q, v, tau));
  data.bind(model, kAbaDerivativesWorkspaces);
  AbaDerivativesWorkspace& w = data.workspace<AbaDerivativesWorkspace>();
  aba(model, data, q, v, tau, external_forces);
  // M⁻¹ is symmetric: the transpose of its row-major storage copies it as it lies.
  w.ddq_dtau = minverse_from_factors(model, data).transpose();
  const RneaDerivativesWorkspace& dtau =
      rnea_derivatives(model, data, q, v, data.ddq, external_forces);

  InterruptionPoll poll(data.interruption);
  if (!tree_sparse::negated_products(data.dof_parent, data.dof_subtree_end, model.nv, model.nv,
                                     w.ddq_dtau.data(), dtau.dtau_dq.data(), dtau.dtau_dv.data(),
                                     w.ddq_dq.data(), w.ddq_dv.data(), poll)) {
    throw Interrupted();
  }
  return w;
}

}  // namespace torqued
