// Activations of optimal-control residuals: the scalar a(r) a cost term takes of its residual r,
// with the gradient a_r and the Hessian a_rr (diagonal for every activation here), as Crocoddyl's
// ActivationModels define them (Mastalli et al., "Crocoddyl: An Efficient and Versatile Framework
// for Multi-Contact Optimal Control", ICRA 2020, §III-B):
//   quadratic                  a = ½ ‖r‖²                   a_r = r, a_rr = 1
//   weighted quadratic         a = ½ Σ w_i r_i²             a_r = w ∘ r, a_rr = w
//   quadratic barrier [l, u]   a = ½ ‖min(r − l, 0)‖² + ½ ‖max(r − u, 0)‖²
//                              a_r = the clipped excess, a_rr = 1 outside [l, u], 0 inside
//   weighted quadratic barrier the same with weights w
//   smooth 1-norm (ε)          a = Σ √(ε + r_i²)            a_r = r_i / √(ε + r_i²),
//                                                           a_rr = ε / (ε + r_i²)^{3/2}
// (Crocoddyl's smooth 1-norm takes 1 / (ε + r²)^{3/2} for a_rr; this is the exact curvature.)
#pragma once

#include <Eigen/Core>

namespace torqued {

enum class ActivationType {
  kQuadratic,
  kWeightedQuadratic,
  kQuadraticBarrier,
  kWeightedQuadraticBarrier,
  kSmooth1Norm,
};

struct Activation {
  ActivationType type = ActivationType::kQuadratic;
  Eigen::VectorXd weights = {};            // the weighted ones: one per residual value, ≥ 0
  Eigen::VectorXd lower = {}, upper = {};  // the barriers: l ≤ u, ±∞ allowed
  double smoothing = 1.0;                  // ε of the smooth 1-norm, > 0
};

// a(r).
double activation_value(const Activation& activation, const Eigen::Ref<const Eigen::VectorXd>& r);

// a(r), with a_r into `gradient` and the diagonal of a_rr into `curvature` (both r's size).
double activation_derivatives(const Activation& activation,
                              const Eigen::Ref<const Eigen::VectorXd>& r,
                              Eigen::Ref<Eigen::VectorXd> gradient,
                              Eigen::Ref<Eigen::VectorXd> curvature);

}  // namespace torqued
