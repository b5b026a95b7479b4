// Forward dynamics by the innovations factorization (Rodriguez & Kreutz 1988, Part I §4 Fact
// 4.1 and Theorem 4.1, algorithm FD1 of eqs 4.17-4.22; digest-001-004 §1.4-1.5):
//   T' = τ − C q̇ − g                                  (sweeps 1-2: RNEA with q̈ = 0)
//   q̈  = (I − HΨL)ᵀ D⁻¹ (I − HΨL) T'
// In world coordinates every φ(k+1, k) is the identity, P(k) is the articulated inertia I^A,
// the Kalman gain is L = U D⁻¹ with U = I^A ⁰S, and ψ = I − L ⁰Sᵀ. For a tree the tip-to-base
// order becomes children before parents:
//   Riccati, i = N..1:  U_i = I^A_i ⁰S_i,  D_i = ⁰S_iᵀ U_i,  I^A_λ += I^A_i − U_i D_i⁻¹ U_iᵀ
//   filter,  i = N..1:  ε_i = T'_i − ⁰S_iᵀ z_i,  ν_i = D_i⁻¹ ε_i,  z_λ += z_i + U_i ν_i
//   smoother, i = 1..N: q̈_i = ν_i − D_i⁻¹ U_iᵀ λ_λ,  λ_i = λ_λ + ⁰S_i q̈_i
// z is the innovations state (an articulated force) and λ the smoother's co-state (a body
// acceleration). The factorization needs q only and serves any number of right-hand sides, each
// in O(n); velocities and gravity enter only through T'. These are the articulated-body core's
// passes (articulated_body.hpp): the Riccati recursion is its elimination, and the filter and
// smoother are its bias and acceleration passes at rest, without gravity (c = 0, a_0 = 0), with
// z in ArticulatedBodyWorkspace::pa and λ in data.oa_gf.
#include "engine/algorithms/forward_dynamics_factorization.hpp"

#include <cassert>

#include "engine/algorithms/articulated_body.hpp"
#include "engine/algorithms/rnea.hpp"

namespace torqued {

void factorize_mass_matrix(const Model& model, Data& data, const ConstVectorRef& q) {
  assert(fits(model, data, q));
  data.bind(model, kAbaWorkspaces);
  const int n = model.nbodies();
  for (int i = 1; i < n; ++i) articulated::load_inertia(model, data, i, q.data());
  for (int i = n - 1; i > 0; --i) {
    articulated::eliminate(model, data, i, articulated::EveryForceGiven{nullptr});
  }
}

const Eigen::VectorXd& solve_factorized(const Model& model, Data& data, const ConstVectorRef& rhs) {
  assert(fits(model, data) && rhs.size() == model.nv);
  data.bind(model, kAbaWorkspaces);
  const int n = model.nbodies();
  const articulated::EveryForceGiven mask{rhs.data()};
  ArticulatedBodyWorkspace& w = data.workspace<ArticulatedBodyWorkspace>();
  for (int i = 1; i < n; ++i) {
    w.pa[i] = Force::Zero();
    w.c[i] = Motion::Zero();
  }
  for (int i = n - 1; i > 0; --i) articulated::propagate_bias(model, data, i, mask);
  data.oa_gf[0] = Motion::Zero();
  for (int i = 1; i < n; ++i) articulated::accelerate(model, data, i, mask);
  return data.ddq;
}

const Eigen::VectorXd& forward_dynamics_factorization(const Model& model, Data& data,
                                                      const ConstVectorRef& q,
                                                      const ConstVectorRef& v,
                                                      const ConstVectorRef& tau) {
  assert(fits(model, data, q, v, tau));
  data.tau = tau - nonlinear_effects(model, data, q, v);
  factorize_mass_matrix(model, data, q);
  return solve_factorized(model, data, data.tau);
}

}  // namespace torqued
