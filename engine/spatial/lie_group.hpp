// SO(3) and SE(3): exponentials, logarithms and their right Jacobians, which configurations
// integrate and difference with (model/configuration.hpp) and which the optimal-control residuals
// of frame placements and orientations differentiate (Solà, Deray & Atchuthan 2018, "A micro Lie
// theory for state estimation in robotics", §IV and App. A-B; Barfoot 2017, "State Estimation for
// Robotics", §7.1.5 for SE(3)). Twists ξ = (ρ, ω) have their linear part first, as the free-flyer
// joint's velocity has, and act on the right: X ⊕ ξ = X Exp(ξ).
#pragma once

#include <Eigen/Geometry>

#include "engine/spatial/motion.hpp"
#include "engine/spatial/transform.hpp"

namespace torqued {

// The coefficients of the SO(3) and SE(3) Jacobians as functions of the angle t, by their
// Taylor series below t = 0.1, where the closed forms lose digits to cancellation:
//   a(t) = (1 − cos t) / t²                b(t) = (t − sin t) / t³
//   c(t) = (t² + 2 cos t − 2) / (2 t⁴)     d(t) = (2 t − 3 sin t + t cos t) / (2 t⁵)
struct ExpCoefficients {
  double a, b, c, d;
};
ExpCoefficients exp_coefficients(double t2);

// Exp(ω) of SO(3) as a quaternion.
Eigen::Quaterniond so3_exp(const Vec3& w);

// Exp(ω) of SO(3) (Rodrigues) and its right Jacobian J_r(ω) = I − a [ω]× + b [ω]×².
void so3_exp_and_right_jacobian(const Vec3& w, const ExpCoefficients& k, Mat3& rotation,
                                Mat3& right_jacobian);

// Barfoot's Q(ρ, φ), the off-diagonal block of SE(3)'s left Jacobian [[J_l(φ), Q], [0, J_l(φ)]]
// for ξ = (ρ, φ); the right Jacobian is J_l(−ξ), so it takes Q(−ρ, −φ).
Mat3 se3_jacobian_coupling(const Vec3& rho, const Vec3& phi, const ExpCoefficients& k);

// J_l(ω)⁻¹ = I − [ω]× / 2 + e [ω]×², e = (1 − t sin t / (2 (1 − cos t))) / t²; J_r(ω)⁻¹ is
// J_l(−ω)⁻¹.
Mat3 so3_left_jacobian_inverse(const Vec3& w);
Mat3 so3_right_jacobian_inverse(const Vec3& w);

// Log of SO(3), the rotation vector ω with Exp(ω) = R, |ω| ≤ π.
Vec3 so3_log(const Eigen::Quaterniond& rotation);
Vec3 so3_log(const Mat3& rotation);

// Log of SE(3): ξ = (J_l(ω)⁻¹ p, ω) with Exp(ξ) = (R, p).
Vec6 se3_log(const Transform& placement);

// J_r(ξ)⁻¹ of SE(3), the derivative of Log(X Exp(δ)) along δ at δ = 0 where Log X = ξ:
// [[J_r(ω)⁻¹, −J_r(ω)⁻¹ Q(−ρ, −ω) J_r(ω)⁻¹], [0, J_r(ω)⁻¹]] (Pinocchio's Jlog6).
Mat6 se3_right_jacobian_inverse(const Vec6& xi);

}  // namespace torqued
