// Composite-rigid-body algorithm (Featherstone 1987, §5.3-5.5; trees in §7.2), in world
// coordinates: with every inertia and motion subspace expressed in the world frame, the composite
// inertia of a subtree is a plain sum of 10 parameters and each entry of M is a dot product, so the
// inward pass needs no coordinate transform per ancestor (Pinocchio's choice as well).
//   outward: ⁰I_i = ⁰X_i* I_i ⁱX_0,   ⁰S_i = ⁰X_i S_i
//   inward:  I^c_i = ⁰I_i + Σ_children I^c_c
//            F = I^c_i ⁰S_i,   M_ji = M_ijᵀ = ⁰S_jᵀ F  for j = i and every ancestor j of i
#include "engine/algorithms/crba.hpp"

#include "engine/model/joint_world.hpp"

namespace torqued {

const Eigen::MatrixXd& crba(const Model& model, Data& data, const ConstVectorRef& q) {
  const double* qp = q.data();
  const int n = model.nbodies();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    compose_joint_transform(model.joint_placements[i], joint, qp + joint.idx_q, data.liMi[i]);
    data.oMi[i] = data.oMi[model.parent[i]] * data.liMi[i];
    data.oYcrb[i] = model.inertias[i].transformed_by(data.oMi[i]);
    world_subspace(joint, data.oMi[i], data.oS.data() + 6 * joint.idx_v);
  }

  // Raw pointers: the stores into M would otherwise make the compiler reload every Eigen member
  // after each write, since they could alias.
  const int nv = model.nv;
  const double* os = data.oS.data();  // column r of ⁰S starts at os + 6 r
  double* m = data.M.data();          // column-major, leading dimension nv
  for (int i = n - 1; i > 0; --i) {
    const Joint& joint = model.joints[i];
    const RigidInertia& composite = data.oYcrb[i];
    for (int k = 0; k < joint.nv; ++k) {
      const int col = joint.idx_v + k;
      const double* sc = os + 6 * col;
      const Force f = composite * Motion{Vec3(sc[0], sc[1], sc[2]), Vec3(sc[3], sc[4], sc[5])};
      const double fv[6] = {f.linear.x(),  f.linear.y(),  f.linear.z(),
                            f.angular.x(), f.angular.y(), f.angular.z()};
      const auto store = [&](int row) {
        const double* sr = os + 6 * row;
        const double value = sr[0] * fv[0] + sr[1] * fv[1] + sr[2] * fv[2] + sr[3] * fv[3] +
                             sr[4] * fv[4] + sr[5] * fv[5];
        m[row + col * nv] = value;
        m[col + row * nv] = value;
      };
      // The joint's own block, then the rows of every ancestor joint.
      for (int row = joint.idx_v; row <= col; ++row) store(row);
      for (int j = model.parent[i]; j > 0; j = model.parent[j]) {
        const Joint& ancestor = model.joints[j];
        for (int row = ancestor.idx_v; row < ancestor.idx_v + ancestor.nv; ++row) store(row);
      }
    }
    const int parent = model.parent[i];
    if (parent > 0) data.oYcrb[parent] += composite;
  }
  return data.M;
}

}  // namespace torqued
