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
  // act(f) for a transform whose rotation is known to turn about coordinate axis `kAxis` only:
  // the other axes' 2x2 block is read from `rotation` and the rest is skipped, 14
  // multiplications instead of 24. Same result as act(f), which multiplies by the exact zeros.
  template <int kAxis>
  Force act_about_axis(const Force& f) const {
    constexpr int b = (kAxis + 1) % 3;
    constexpr int c = (kAxis + 2) % 3;
    const double cos_bb = rotation(b, b), r_bc = rotation(b, c);
    const double r_cb = rotation(c, b), cos_cc = rotation(c, c);
    Force out;
    out.linear[kAxis] = f.linear[kAxis];
    out.linear[b] = cos_bb * f.linear[b] + r_bc * f.linear[c];
    out.linear[c] = r_cb * f.linear[b] + cos_cc * f.linear[c];
    out.angular[kAxis] = f.angular[kAxis];
    out.angular[b] = cos_bb * f.angular[b] + r_bc * f.angular[c];
    out.angular[c] = r_cb * f.angular[b] + cos_cc * f.angular[c];
    out.angular += translation.cross(out.linear);
    return out;
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
