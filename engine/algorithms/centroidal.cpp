// Centre of mass, its Jacobian and the centroidal momentum (Orin, Goswami & Lee 2013; Featherstone
// 1987, ch. 2-3 and §7.2), world axes.
//   c, ċ:  one outward pass; c = Σ m_i ⁰c_i / m,  ċ = Σ m_i (velocity of the point c_i) / m
//   J_c, A_G:  outward pass for ⁰X_i, ⁰S_i and I_i = ⁰X_i* I_i (world frame); inward pass
//     I^c_λ(i) += I^c_i; column k of joint i: F = I^c_i ⁰S_k (the momentum of i's subtree moving
//     rigidly with unit rate of k, about the world origin); J_c[:, k] = F.linear / m and
//     A_G[:, k] = (F.linear, F.angular − c × F.linear).
//   h_G:  Σ_i ⁰X_i* (I_i v_i), with the moment moved to c.
#include "engine/algorithms/centroidal.hpp"

#include <cassert>

#include "engine/model/joint_world.hpp"

namespace torqued {

namespace {

// The centre of mass from data.oMi; returns the total mass.
double compute_com(const Model& model, Data& data) {
  CentroidalWorkspace& w = data.workspace<CentroidalWorkspace>();
  double mass = 0.0;
  Vec3 first_moment = Vec3::Zero();
  for (int i = 1; i < model.nbodies(); ++i) {
    const RigidInertia& inertia = model.inertias[i];
    mass += inertia.mass;
    first_moment +=
        data.oMi[i].rotation * inertia.first_moment + inertia.mass * data.oMi[i].translation;
  }
  w.com = mass > 0.0 ? Vec3(first_moment / mass) : Vec3::Zero();
  return mass;
}

// World-frame ⁰S columns and composite inertias I^c_i after forward_kinematics(q).
void composite_world_inertias(const Model& model, Data& data) {
  CentroidalWorkspace& w = data.workspace<CentroidalWorkspace>();
  const int n = model.nbodies();
  for (int i = 1; i < n; ++i) {
    world_subspace(model.joints[i], data.oMi[i], data.oS.col(model.joints[i].idx_v).data());
    w.composite[i] = model.inertias[i].transformed_by(data.oMi[i]);
  }
  for (int i = n - 1; i > 0; --i) {
    if (model.parent[i] > 0) w.composite[model.parent[i]] += w.composite[i];
  }
}

}  // namespace

const Vec3& center_of_mass(const Model& model, Data& data, const ConstVectorRef& q) {
  assert(fits(model, data, q));
  data.bind(model, kCentroidalWorkspaces);
  CentroidalWorkspace& w = data.workspace<CentroidalWorkspace>();
  forward_kinematics(model, data, q);
  compute_com(model, data);
  return w.com;
}

void center_of_mass(const Model& model, Data& data, const ConstVectorRef& q,
                    const ConstVectorRef& v) {
  assert(fits(model, data, q, v));
  data.bind(model, kCentroidalWorkspaces);
  CentroidalWorkspace& w = data.workspace<CentroidalWorkspace>();
  forward_kinematics(model, data, q, v);
  const double mass = compute_com(model, data);
  Vec3 momentum = Vec3::Zero();
  for (int i = 1; i < model.nbodies(); ++i) {
    const RigidInertia& inertia = model.inertias[i];
    // The linear momentum m_i v − h_i × ω (body frame) is m_i times the velocity of c_i.
    momentum += data.oMi[i].rotation * (inertia * data.v[i]).linear;
  }
  w.vcom = mass > 0.0 ? Vec3(momentum / mass) : Vec3::Zero();
}

const Eigen::Matrix<double, 3, Eigen::Dynamic>& center_of_mass_jacobian(const Model& model,
                                                                        Data& data,
                                                                        const ConstVectorRef& q) {
  assert(fits(model, data, q));
  data.bind(model, kCentroidalWorkspaces);
  CentroidalWorkspace& w = data.workspace<CentroidalWorkspace>();
  forward_kinematics(model, data, q);
  const double mass = compute_com(model, data);
  composite_world_inertias(model, data);
  const double inverse_mass = mass > 0.0 ? 1.0 / mass : 0.0;
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const RigidInertia& composite = w.composite[i];
    for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) {
      // m^c ⁰v_k + ⁰ω_k × h^c: the linear momentum of the subtree per unit rate of k.
      w.Jcom.col(k) = inverse_mass * (composite.mass * data.oS.col(k).head<3>() +
                                      data.oS.col(k).tail<3>().cross(composite.first_moment));
    }
  }
  return w.Jcom;
}

const Force& centroidal_momentum(const Model& model, Data& data, const ConstVectorRef& q,
                                 const ConstVectorRef& v) {
  center_of_mass(model, data, q, v);
  CentroidalWorkspace& w = data.workspace<CentroidalWorkspace>();
  Force momentum = Force::Zero();  // about the world origin
  for (int i = 1; i < model.nbodies(); ++i) {
    momentum += data.oMi[i].act(model.inertias[i] * data.v[i]);
  }
  w.hg = {momentum.linear, momentum.angular - w.com.cross(momentum.linear)};
  return w.hg;
}

const Eigen::Matrix<double, 6, Eigen::Dynamic>& centroidal_momentum_matrix(
    const Model& model, Data& data, const ConstVectorRef& q) {
  assert(fits(model, data, q));
  data.bind(model, kCentroidalWorkspaces);
  CentroidalWorkspace& w = data.workspace<CentroidalWorkspace>();
  forward_kinematics(model, data, q);
  compute_com(model, data);
  composite_world_inertias(model, data);
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) {
      const Force f = w.composite[i] * Motion::FromVector(data.oS.col(k));
      w.Ag.col(k) << f.linear, f.angular - w.com.cross(f.linear);
    }
  }
  return w.Ag;
}

}  // namespace torqued
