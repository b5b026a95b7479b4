// Frame Jacobians (Featherstone 1987, §7.2). Column k of the Jacobian of a frame on body b is the
// motion subspace of joint j(k) carried to the frame when j(k) supports b, and zero otherwise:
//   world:               ⁰X_j S_j
//   local-world-aligned: the same twist taken at the frame origin p: [v + ω × p; ω]
//   local:               fX⁰ ⁰X_j S_j
#include "engine/algorithms/jacobian.hpp"

#include <cassert>

namespace torqued {

void frame_jacobian(const Model& model, Data& data, int frame, ReferenceFrame reference,
                    Eigen::Ref<Eigen::MatrixXd> jacobian) {
  assert(fits(model, data) && jacobian.rows() == 6 && jacobian.cols() == model.nv);
  assert(frame >= 0 && frame < static_cast<int>(model.frames.size()));
  const Frame& f = model.frames[frame];
  const Transform oMf = data.oMi[f.body] * f.placement;
  jacobian.setZero();
  double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int j = f.body; j > 0; j = model.parent[j]) {
    const Joint& joint = model.joints[j];
    for (int k = 0; k < joint.nv; ++k) {
      unit[k] = 1.0;
      const Motion world = data.oMi[j].act(joint_motion(joint, unit));
      unit[k] = 0.0;
      Motion column = world;
      if (reference == ReferenceFrame::kLocalWorldAligned) {
        column.linear += world.angular.cross(oMf.translation);
      } else if (reference == ReferenceFrame::kLocal) {
        column = oMf.act_inverse(world);
      }
      jacobian.col(joint.idx_v + k).head<3>() = column.linear;
      jacobian.col(joint.idx_v + k).tail<3>() = column.angular;
    }
  }
}

}  // namespace torqued
