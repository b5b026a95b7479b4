// Rigid transforms acting on spatial vectors (Featherstone 1987, §2.5 and §8.3).
//
// A Transform aMb is the placement of frame b in frame a: `rotation` = aRb (columns are b's axes
// in a) and `translation` = the origin of b expressed in a. It is stored as R and p, never as the
// 6x6 Plücker matrix; act() maps a quantity expressed in b into a, act_inverse() maps back.
// Featherstone's bXa (coordinates of a into coordinates of b) is act_inverse of aMb.
#pragma once

#include "engine/spatial/motion.hpp"

namespace torqued {

struct Transform {
  Mat3 rotation;
  Vec3 translation;

  static Transform Identity() { return {Mat3::Identity(), Vec3::Zero()}; }

  // aMb * bMc = aMc.
  Transform operator*(const Transform& b) const {
    return {rotation * b.rotation, rotation * b.translation + translation};
  }
  Transform inverse() const {
    return {rotation.transpose(), -(rotation.transpose() * translation)};
  }

  Vec3 act(const Vec3& point) const { return rotation * point + translation; }
  Vec3 act_inverse(const Vec3& point) const { return rotation.transpose() * (point - translation); }

  Motion act(const Motion& m) const {
    const Vec3 w = rotation * m.angular;
    return {rotation * m.linear + translation.cross(w), w};
  }
  Motion act_inverse(const Motion& m) const {
    return {rotation.transpose() * (m.linear - translation.cross(m.angular)),
            rotation.transpose() * m.angular};
  }
  Force act(const Force& f) const {
    const Vec3 lin = rotation * f.linear;
    return {lin, rotation * f.angular + translation.cross(lin)};
  }
  Force act_inverse(const Force& f) const {
    return {rotation.transpose() * f.linear,
            rotation.transpose() * (f.angular - translation.cross(f.linear))};
  }

  // The 6x6 matrix acting on [linear; angular] motion vectors (tests and dense Jacobians only).
  Mat6 motion_matrix() const {
    Mat6 x = Mat6::Zero();
    x.topLeftCorner<3, 3>() = rotation;
    x.topRightCorner<3, 3>() = skew(translation) * rotation;
    x.bottomRightCorner<3, 3>() = rotation;
    return x;
  }
  Mat6 force_matrix() const {
    Mat6 x = Mat6::Zero();
    x.topLeftCorner<3, 3>() = rotation;
    x.bottomLeftCorner<3, 3>() = skew(translation) * rotation;
    x.bottomRightCorner<3, 3>() = rotation;
    return x;
  }
};

// Rotation about a unit axis by an angle (Rodrigues' formula).
inline Mat3 axis_angle_rotation(const Vec3& unit_axis, double angle) {
  return Eigen::AngleAxisd(angle, unit_axis).toRotationMatrix();
}

}  // namespace torqued
