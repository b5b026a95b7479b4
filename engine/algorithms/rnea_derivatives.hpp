// Analytic derivatives of inverse dynamics (Carpentier & Mansard 2018, "Analytical Derivatives of
// Rigid Body Dynamics Algorithms", RSS).
#pragma once

#include <span>

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// The partial derivatives of τ = rnea(q, q̇, q̈, f_ext) at the given state:
//   data.dtau_dq: ∂τ/∂q in the tangent space (column k = d/dε τ(q ⊕ ε e_k), see integrate());
//   data.dtau_dv: ∂τ/∂q̇;
//   data.M:       ∂τ/∂q̈ = M(q), full and symmetric;
//   data.tau:     τ itself.
// `external_forces` as in rnea(): one per body, body frame, held fixed in the body when q moves.
void rnea_derivatives(const Model& model, Data& data, const ConstVectorRef& q,
                      const ConstVectorRef& v, const ConstVectorRef& a,
                      std::span<const Force> external_forces = {});

}  // namespace torqued
