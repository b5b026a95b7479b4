// Analytic derivatives of forward dynamics (Carpentier & Mansard 2018, "Analytical Derivatives of
// Rigid Body Dynamics Algorithms", RSS, §V).
#pragma once

#include <span>

#include "engine/algorithms/aba.hpp"

namespace torqued {

// The partial derivatives of q̈ = aba(q, q̇, τ, f_ext) at the given state:
//   data.ddq_dq:   ∂q̈/∂q in the tangent space (column k = d/dε q̈(q ⊕ ε e_k));
//   data.ddq_dv:   ∂q̈/∂q̇;
//   data.ddq_dtau: ∂q̈/∂τ = M⁻¹, full and symmetric;
//   data.ddq:      q̈ itself.
// Also leaves the RNEA derivatives at (q, q̇, q̈) in data.dtau_dq, data.dtau_dv and M in data.M.
// Throws SingularSystemError as aba() does.
void aba_derivatives(const Model& model, Data& data, const ConstVectorRef& q,
                     const ConstVectorRef& v, const ConstVectorRef& tau,
                     std::span<const Force> external_forces = {});

}  // namespace torqued
