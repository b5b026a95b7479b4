// Impacts with restitution: Poisson's model with synchronous compression and decompression at
// every contact (Featherstone 1987, §9.9.2, eqs 9.74-9.83).
//   compression:    M δv_c = Jᵀ λ_c,   J(v⁻ + δv_c) = A λ_c + J v⁻ complementary to λ_c
//                   (the LCP of contact_dynamics with b = J v⁻; friction on the cone if any μ > 0)
//   decompression:  λ_d = e λ_c + λ_x,   λ_x ≥ 0 the frictionless normal impulse that keeps every
//                   normal velocity non-negative:  g = J_n(v⁻ + (1 + e) M⁻¹Jᵀ λ_c),
//                   A_nn λ_x + g ≥ 0 complementary to λ_x   (9.81-9.83)
//   v⁺ = v⁻ + M⁻¹Jᵀ ((1 + e) λ_c + λ_x)
// The restitution scales the whole compression impulse, tangential part included: with the
// complementarity of the compression phase, λ_cᵀ J v_c ≤ 0, this makes the kinetic energy change
// ½(e² − 1) λ_cᵀ A λ_c − ½ λ_xᵀ A_nn λ_x ≤ 0, so an impact never creates energy; with e = 1 and a
// single frictionless contact it is conserved (λ_x = 0).
#pragma once

#include "engine/algorithms/contact_dynamics.hpp"

namespace torqued {

// Post-impact velocities in ws.velocity and the total impulses (N·s, world frame, on the body at
// the point) in ws.forces / ws.modes / ws.lambda.
// `restitution` e in [0, 1]. Throws SingularSystemError (aba.hpp) when M is singular.
ComplementarityResult impact(const Model& model, Data& data, ContactWorkspace& ws,
                             const ConstVectorRef& q, const ConstVectorRef& v,
                             std::span<const PointContact> contacts, double restitution,
                             const ContactOptions& options = {});

}  // namespace torqued
