// World-frame motion subspaces: ⁰S_i = ⁰X_i S_i, the columns CRBA, ABA and the Jacobians share.
#pragma once

#include "engine/model/joint.hpp"

namespace torqued {

// Writes the joint's nv world-frame subspace columns, 6 doubles each, [linear; angular], to out.
inline void world_subspace(const Joint& joint, const Transform& oMi, double* out) {
  if (joint.nv == 1) {
    // ⁰X_i S written for the two halves of S: at most 18 multiplications.
    const Vec3 angular = oMi.rotation * joint.subspace.angular;
    const Vec3 linear = oMi.rotation * joint.subspace.linear + oMi.translation.cross(angular);
    Eigen::Map<Vec6>(out) << linear, angular;
    return;
  }
  if (joint.type == JointType::kFreeFlyer) {
    // S = I6, so ⁰S is ⁰X_i itself: [R, [p]×R; 0, R] column by column.
    for (int k = 0; k < 3; ++k) {
      const Vec3 r = oMi.rotation.col(k);
      Eigen::Map<Vec6>(out + 6 * k) << r, Vec3::Zero();
      Eigen::Map<Vec6>(out + 6 * (k + 3)) << oMi.translation.cross(r), r;
    }
    return;
  }
  double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int k = 0; k < joint.nv; ++k) {
    unit[k] = 1.0;
    const Motion s = oMi.act(joint_motion(joint, unit));
    unit[k] = 0.0;
    Eigen::Map<Vec6>(out + 6 * k) << s.linear, s.angular;
  }
}

}  // namespace torqued
