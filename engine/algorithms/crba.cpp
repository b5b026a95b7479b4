// Composite-rigid-body algorithm for the joint-space mass matrix (Featherstone 1987, §5.3-5.5;
// trees in §7.2), in body coordinates.
//   inward, i = N..1:  F = I^c_i S_i,   M_ii = S_iᵀ F
//                      for each ancestor j of i (child c on the path):  F ← ᶜX_j* F,  M_ji = S_jᵀ F
//                      I^c_λ(i) += liMi* I^c_i  (a rigid inertia: 10 parameters)
// Only the upper triangle is computed; the lower one is mirrored at the end.
#include "engine/algorithms/crba.hpp"

#include <cassert>

namespace torqued {
namespace {

// liMi[j].act(f), through the rotation's 2x2 block when the model knows its shape: the walk
// below is the CRBA's inner loop, O(nv · depth) transforms per call.
inline Force force_to_parent(const Model& model, const Data& data, int j, const Force& f) {
  const Transform& transform = data.liMi[j];
  switch (model.parent_rotation_axis[j]) {
    case AxisKind::kX:
      return transform.act_about_axis<0>(f);
    case AxisKind::kY:
      return transform.act_about_axis<1>(f);
    case AxisKind::kZ:
      return transform.act_about_axis<2>(f);
    case AxisKind::kGeneral:
      break;
  }
  return transform.act(f);
}

// I^c S for a 1-DOF joint: revolutes about a coordinate axis (most joints) read it off the
// inertia instead of multiplying by a unit vector.
inline Force composite_times_subspace(const RigidInertia& composite, const Joint& joint) {
  if (joint.type == JointType::kRevolute || joint.type == JointType::kContinuous) {
    switch (joint.axis_kind) {
      case AxisKind::kX:
        return composite.times_unit_rotation<0>();
      case AxisKind::kY:
        return composite.times_unit_rotation<1>();
      case AxisKind::kZ:
        return composite.times_unit_rotation<2>();
      case AxisKind::kGeneral:
        break;
    }
  }
  return composite * joint.subspace;
}

}  // namespace

const Eigen::MatrixXd& crba(const Model& model, Data& data, const ConstVectorRef& q) {
  assert(fits(model, data, q));
  data.bind(model, kCrbaWorkspaces);
  MassMatrixWorkspace& w = data.workspace<MassMatrixWorkspace>();
  const double* qp = q.data();
  const int n = model.nbodies();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    compose_joint_transform(model.joint_placements[i], joint, qp + joint.idx_q, data.liMi[i]);
    w.Ycrb[i] = model.inertias[i];
  }

  const int nv = model.nv;
  // Column-major with leading dimension nv: rows idx_v..idx_v+nv_j of a column are contiguous,
  // so Sⱼᵀ F lands in place through project_force.
  double* m = w.M.data();
  double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const RigidInertia& composite = w.Ycrb[i];
    for (int k = 0; k < joint.nv; ++k) {
      const int col = joint.idx_v + k;
      double* column = m + static_cast<std::ptrdiff_t>(col) * nv;
      Force f;
      if (joint.nv == 1) {
        f = composite_times_subspace(composite, joint);
      } else {
        unit[k] = 1.0;
        f = composite * joint_motion(joint, unit);
        unit[k] = 0.0;
      }
      project_force(joint, f, column + joint.idx_v);
      for (int j = i; model.parent[j] > 0; j = model.parent[j]) {
        f = force_to_parent(model, data, j, f);
        const Joint& ancestor = model.joints[model.parent[j]];
        project_force(ancestor, f, column + ancestor.idx_v);
      }
    }
    const int parent = model.parent[i];
    if (parent > 0) w.Ycrb[parent] += composite.transformed_by(data.liMi[i]);
  }

  for (int col = 0; col < nv; ++col) {
    for (int row = col + 1; row < nv; ++row) m[row + col * nv] = m[col + row * nv];
  }
  return w.M;
}

}  // namespace torqued
