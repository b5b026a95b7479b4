// SO(3) and SE(3) exponentials, logarithms and Jacobians (see the header).
#include "engine/spatial/lie_group.hpp"

#include <cmath>

namespace torqued {

ExpCoefficients exp_coefficients(double t2) {
  if (t2 < 1e-2) {
    return {0.5 - t2 / 24.0 + t2 * t2 / 720.0 - t2 * t2 * t2 / 40320.0,
            1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0 - t2 * t2 * t2 / 362880.0,
            1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0 - t2 * t2 * t2 / 3628800.0,
            1.0 / 120.0 - t2 / 2520.0 + t2 * t2 / 120960.0 - t2 * t2 * t2 / 9979200.0};
  }
  const double t = std::sqrt(t2);
  const double sin_t = std::sin(t);
  const double cos_t = std::cos(t);
  return {(1.0 - cos_t) / t2, (t - sin_t) / (t2 * t), (t2 + 2.0 * cos_t - 2.0) / (2.0 * t2 * t2),
          (2.0 * t - 3.0 * sin_t + t * cos_t) / (2.0 * t2 * t2 * t)};
}

Eigen::Quaterniond so3_exp(const Vec3& w) {
  const double angle = w.norm();
  if (angle < 1e-12)
    return Eigen::Quaterniond(1.0, 0.5 * w.x(), 0.5 * w.y(), 0.5 * w.z()).normalized();
  return Eigen::Quaterniond(Eigen::AngleAxisd(angle, w / angle));
}

void so3_exp_and_right_jacobian(const Vec3& w, const ExpCoefficients& k, Mat3& rotation,
                                Mat3& right_jacobian) {
  const Mat3 wx = skew(w);
  const Mat3 wx2 = wx * wx;
  // sin t / t = 1 − t² b and (1 − cos t) / t² = a.
  rotation = Mat3::Identity() + (1.0 - w.squaredNorm() * k.b) * wx + k.a * wx2;
  right_jacobian = Mat3::Identity() - k.a * wx + k.b * wx2;
}

Mat3 se3_jacobian_coupling(const Vec3& rho, const Vec3& phi, const ExpCoefficients& k) {
  const Mat3 px = skew(phi);
  const Mat3 rx = skew(rho);
  const Mat3 px_rx = px * rx;
  const Mat3 rx_px = rx * px;
  const Mat3 px_rx_px = px_rx * px;
  return 0.5 * rx + k.b * (px_rx + rx_px + px_rx_px) +
         k.c * (px * px_rx + rx_px * px - 3.0 * px_rx_px) + k.d * (px_rx_px * px + px * px_rx_px);
}

Mat3 so3_left_jacobian_inverse(const Vec3& w) {
  const double t2 = w.squaredNorm();
  const Mat3 wx = skew(w);
  double e;
  if (t2 < 1e-8) {
    e = 1.0 / 12.0 + t2 / 720.0;
  } else {
    const double t = std::sqrt(t2);
    e = (1.0 - t * std::sin(t) / (2.0 * (1.0 - std::cos(t)))) / t2;
  }
  return Mat3::Identity() - 0.5 * wx + e * wx * wx;
}

Mat3 so3_right_jacobian_inverse(const Vec3& w) { return so3_left_jacobian_inverse(-w); }

Vec3 so3_log(const Eigen::Quaterniond& rotation) {
  const Eigen::AngleAxisd aa(rotation.normalized());
  return aa.angle() * aa.axis();
}

Vec3 so3_log(const Mat3& rotation) { return so3_log(Eigen::Quaterniond(rotation)); }

Vec6 se3_log(const Transform& placement) {
  const Vec3 w = so3_log(placement.rotation);
  Vec6 xi;
  xi << so3_left_jacobian_inverse(w) * placement.translation, w;
  return xi;
}

Mat6 se3_right_jacobian_inverse(const Vec6& xi) {
  const Vec3 rho = xi.head<3>();
  const Vec3 w = xi.tail<3>();
  const Mat3 inverse = so3_right_jacobian_inverse(w);
  Mat6 out;
  out.topLeftCorner<3, 3>() = inverse;
  out.topRightCorner<3, 3>() =
      -inverse * se3_jacobian_coupling(-rho, -w, exp_coefficients(w.squaredNorm())) * inverse;
  out.bottomLeftCorner<3, 3>().setZero();
  out.bottomRightCorner<3, 3>() = inverse;
  return out;
}

}  // namespace torqued
