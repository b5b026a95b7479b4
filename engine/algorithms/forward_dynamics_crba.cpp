// Forward dynamics by CRBA + sparse LᵀDL (Featherstone 1987, §5.1: M q̈ = τ − C with C from the
// inverse dynamics at q̈ = 0; Featherstone 2008, §6.5 for the factorization):
//   C = rnea(q, q̇, 0),   M = crba(q),   M = Lᵀ D L,   q̈ = L⁻¹ D⁻¹ L⁻ᵀ (τ − C)
#include "engine/algorithms/forward_dynamics_crba.hpp"

#include <cassert>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/ltdl.hpp"
#include "engine/algorithms/rnea.hpp"

namespace torqued {

const Eigen::VectorXd& forward_dynamics_crba(const Model& model, Data& data,
                                             const ConstVectorRef& q, const ConstVectorRef& v,
                                             const ConstVectorRef& tau) {
  assert(fits(model, data, q, v, tau));
  data.ddq = tau - nonlinear_effects(model, data, q, v);
  ltdl_factorize(model, data, crba(model, data, q));
  ltdl_solve(data, data.ddq);
  return data.ddq;
}

}  // namespace torqued
