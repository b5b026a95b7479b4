// Spatial motion and force vectors (Featherstone 1987, ch. 2-3; compact arithmetic of §8.3).
//
// A spatial vector is stored as two 3-vectors, never as a 6-vector, so that the cross products
// and coordinate transforms can be written with 3x3 operations only. The order used on the wire
// and in Jacobians is [linear; angular] (Pinocchio's), so `to_vector()` returns that order.
//   motion m = (linear v, angular w): v is the velocity of the point at the frame origin.
//   force  f = (linear f, angular n): n is the moment about the frame origin.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>

namespace torqued {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;
using Vec6 = Eigen::Matrix<double, 6, 1>;
using Mat6 = Eigen::Matrix<double, 6, 6>;

// [x]× : the 3x3 matrix with skew(x) * y = x.cross(y).
inline Mat3 skew(const Vec3& x) {
  Mat3 s;
  s << 0.0, -x.z(), x.y(), x.z(), 0.0, -x.x(), -x.y(), x.x(), 0.0;
  return s;
}

struct Force;

struct Motion {
  Vec3 linear;
  Vec3 angular;

  static Motion Zero() { return {Vec3::Zero(), Vec3::Zero()}; }
  static Motion FromVector(const Vec6& x) { return {x.head<3>(), x.tail<3>()}; }
  Vec6 to_vector() const {
    Vec6 x;
    x << linear, angular;
    return x;
  }

  Motion operator+(const Motion& m) const { return {linear + m.linear, angular + m.angular}; }
  Motion operator-(const Motion& m) const { return {linear - m.linear, angular - m.angular}; }
  Motion operator-() const { return {-linear, -angular}; }
  Motion operator*(double s) const { return {linear * s, angular * s}; }
  Motion& operator+=(const Motion& m) {
    linear += m.linear;
    angular += m.angular;
    return *this;
  }
  Motion& operator-=(const Motion& m) {
    linear -= m.linear;
    angular -= m.angular;
    return *this;
  }

  // crm: this × m, the derivative of m in a frame moving with velocity *this (Featherstone 2.24).
  Motion cross(const Motion& m) const {
    return {angular.cross(m.linear) + linear.cross(m.angular), angular.cross(m.angular)};
  }
  // crf: this ×* f, the dual cross product acting on forces.
  inline Force cross(const Force& f) const;
  // The scalar product of a motion with a force (power).
  inline double dot(const Force& f) const;
};

struct Force {
  Vec3 linear;
  Vec3 angular;

  static Force Zero() { return {Vec3::Zero(), Vec3::Zero()}; }
  static Force FromVector(const Vec6& x) { return {x.head<3>(), x.tail<3>()}; }
  Vec6 to_vector() const {
    Vec6 x;
    x << linear, angular;
    return x;
  }

  Force operator+(const Force& f) const { return {linear + f.linear, angular + f.angular}; }
  Force operator-(const Force& f) const { return {linear - f.linear, angular - f.angular}; }
  Force operator-() const { return {-linear, -angular}; }
  Force operator*(double s) const { return {linear * s, angular * s}; }
  Force& operator+=(const Force& f) {
    linear += f.linear;
    angular += f.angular;
    return *this;
  }
  Force& operator-=(const Force& f) {
    linear -= f.linear;
    angular -= f.angular;
    return *this;
  }
  double dot(const Motion& m) const { return linear.dot(m.linear) + angular.dot(m.angular); }
};

inline Force Motion::cross(const Force& f) const {
  return {angular.cross(f.linear), angular.cross(f.angular) + linear.cross(f.linear)};
}

inline double Motion::dot(const Force& f) const {
  return linear.dot(f.linear) + angular.dot(f.angular);
}

}  // namespace torqued
