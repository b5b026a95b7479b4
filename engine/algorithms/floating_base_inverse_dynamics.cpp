// Floating-base inverse dynamics (Featherstone 1987, §7.5.1, eqs 7.25-7.31), in world
// coordinates. The force f_i across joint i is the rate of change of momentum of subtree i, which
// is affine in the unknown base acceleration a_0 (here the world-frame acceleration of the root
// body offset by −g, so that gravity enters as in rnea.cpp):
//   outward, i = 1..N: v_i = v_λ + ⁰S_i q̇_i,  a^r_i = a^r_λ + ⁰S_i q̈_i + v_i × ⁰S_i q̇_i
//                      (a^r_root = 0: a_i = a_0 + a^r_i),
//                      I^C_i = ⁰I_i,  p_i = ⁰I_i a^r_i + v_i ×* ⁰I_i v_i − f_ext,i
//   inward,  i = N..2: I^C_λ += I^C_i,  p_λ += p_i                          (7.28, 7.29)
//   root:              a_0 = −(I^C_root)⁻¹ p_root      (zero force on the base, 7.30)
//   joints:            τ_i = ⁰S_iᵀ (I^C_i a_0 + p_i)                          (7.31)
// In world coordinates the composite inertias add as 10 parameters each and no force needs
// transforming on the way in, so the cost is one RNEA plus one 6x6 solve.
#include "engine/algorithms/floating_base_inverse_dynamics.hpp"

#include <Eigen/Cholesky>
#include <stdexcept>

#include "engine/algorithms/articulated_body.hpp"
#include "engine/algorithms/world_frame.hpp"
#include "engine/model/joint_world.hpp"

namespace torqued {

namespace {

using articulated::motion_at;

bool has_free_flyer_root(const Model& model) {
  return model.nbodies() > 1 && model.joints[1].type == JointType::kFreeFlyer &&
         model.parent[1] == 0 && model.subtree_end[1] == model.nbodies();
}

}  // namespace

void floating_base_inverse_dynamics(const Model& model, Data& data, const ConstVectorRef& q,
                                    const ConstVectorRef& v, const ConstVectorRef& ddq,
                                    std::span<const Force> external_forces) {
  if (!has_free_flyer_root(model)) {
    throw std::invalid_argument("floating_base_inverse_dynamics: model '" + model.name +
                                "' has no free-flyer root joint carrying the whole tree");
  }
  const double* qp = q.data();
  const double* vp = v.data();
  const double* ap = ddq.data();
  const int n = model.nbodies();
  double* os = data.oS.data();

  data.ov[0] = Motion::Zero();
  data.oa_gf[0] = Motion::Zero();
  for (int i = 1; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const int parent = model.parent[i];
    const Transform& oMi = place_in_world(model, data, i, qp);
    const double* s = os + 6 * joint.idx_v;
    const Motion vj = world_joint_motion(joint, data, vp);
    const Motion& vel = data.ov[i] = data.ov[parent] + vj;
    Motion& acc = data.oa_gf[i];
    if (i == 1) {
      // The root's motion is the unknown; v × ⁰S q̇ = v × v vanishes for it.
      acc = Motion::Zero();
    } else {
      acc = data.oa_gf[parent] + vel.cross(vj);
      for (int k = 0; k < joint.nv; ++k) acc += motion_at(s + 6 * k) * ap[joint.idx_v + k];
    }
    const RigidInertia& inertia = data.oIc[i] = model.inertias[i].transformed_by(oMi);
    data.pa[i] = inertia * acc + vel.cross(inertia * vel);
    if (!external_forces.empty()) data.pa[i] -= oMi.act(external_forces[i]);
  }

  for (int i = n - 1; i > 1; --i) {
    const int parent = model.parent[i];
    data.oIc[parent] += data.oIc[i];
    data.pa[parent] += data.pa[i];
  }

  // I^C_root is positive definite unless the whole robot is massless or a point mass.
  const Eigen::LLT<Mat6> llt(data.oIc[1].matrix());
  if (llt.info() != Eigen::Success) articulated::throw_singular(model, 1);
  const Vec6 base = llt.solve(-data.pa[1].to_vector());
  const Motion a0 = Motion::FromVector(base);

  double* tau = data.tau.data();
  for (int i = 2; i < n; ++i) {
    const Joint& joint = model.joints[i];
    const Force f = data.oIc[i] * a0 + data.pa[i];
    const double* s = os + 6 * joint.idx_v;
    for (int k = 0; k < joint.nv; ++k) {
      tau[joint.idx_v + k] = motion_at(s + 6 * k).dot(f);
      data.ddq[joint.idx_v + k] = ap[joint.idx_v + k];
    }
  }
  // The root's spatial acceleration without the −g offset is ⁰S_root q̈_root = ⁰X_root q̈_root.
  const Motion root_acc = a0 + Motion{model.gravity, Vec3::Zero()};
  const Motion local = data.oMi[1].act_inverse(root_acc);
  data.ddq.head<3>() = local.linear;
  data.ddq.segment<3>(3) = local.angular;
  data.tau.head<6>().setZero();
}

}  // namespace torqued
