// Models and states shared by the contact, impact and simulation tests: a floating box and ball,
// the solo12 quadruped standing on its four feet, and an independent (dense) evaluation of the
// contact quantities through the existing Jacobian and kinematics algorithms.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/algorithms/contact_dynamics.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/jacobian.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/random_tree.hpp"
#include "tests/engine/support/shared_models.hpp"

namespace torqued::test_support {

// A free-flying solid box (half extents `half`, uniform density), body 1.
inline ModelPtr floating_box(double mass, const Vec3& half) {
  ModelSpec spec;
  spec.name = "box";
  spec.floating_base = true;
  LinkSpec link{"box", {}};
  link.inertial.mass = mass;
  const Vec3 s = 2.0 * half;
  link.inertial.inertia = (mass / 12.0 *
                           Vec3(s.y() * s.y() + s.z() * s.z(), s.x() * s.x() + s.z() * s.z(),
                                s.x() * s.x() + s.y() * s.y()))
                              .asDiagonal();
  spec.links.push_back(link);
  return build_model(spec);
}

// A free-flying solid ball of radius `radius`, body 1.
inline ModelPtr floating_ball(double mass, double radius) {
  ModelSpec spec;
  spec.name = "ball";
  spec.floating_base = true;
  LinkSpec link{"ball", {}};
  link.inertial.mass = mass;
  link.inertial.inertia = Mat3::Identity() * (0.4 * mass * radius * radius);
  spec.links.push_back(link);
  return build_model(spec);
}

// The four bottom corners of a box centred on its body origin.
inline std::vector<Vec3> bottom_corners(const Vec3& half) {
  return {Vec3(half.x(), half.y(), -half.z()), Vec3(-half.x(), half.y(), -half.z()),
          Vec3(-half.x(), -half.y(), -half.z()), Vec3(half.x(), -half.y(), -half.z())};
}

// The box used by the resting-contact tests: 0.4 x 0.3 x 0.2 m, 2 kg, lying flat on z = 0.
struct RestingBox {
  Vec3 half = Vec3(0.2, 0.15, 0.1);
  double mass = 2.0;
  ModelPtr model = floating_box(mass, half);
  Eigen::VectorXd q = [this] {
    Eigen::VectorXd q0 = model->neutral_configuration();
    q0[2] = half.z();
    return q0;
  }();
};

// Its four bottom corners as ground contacts with friction `mu`.
inline std::vector<PointContact> corner_contacts(const Vec3& half, double mu) {
  std::vector<PointContact> contacts;
  for (const Vec3& corner : bottom_corners(half)) {
    contacts.push_back({1, corner, Vec3::UnitZ(), mu});
  }
  return contacts;
}

// A random tree of 2 .. max_links links for the contact tests.
inline ModelPtr random_contact_tree(std::uint64_t seed, int max_links, bool floating_base) {
  RandomTreeOptions options;
  options.min_links = 2;
  options.max_links = max_links;
  options.floating_base = floating_base;
  return build_model(random_tree_spec(seed, options));
}

// The 3 x nv Jacobian of the world velocity of a point of `body` (body frame coordinates),
// through frame_jacobian() of the body's own frame.
inline Eigen::MatrixXd point_jacobian(const Model& model, Data& data, int body, const Vec3& point) {
  int frame = -1;
  for (int f = 0; f < static_cast<int>(model.frames.size()); ++f) {
    if (model.frames[f].body == body && model.frames[f].kind == FrameKind::kBody) frame = f;
  }
  Eigen::MatrixXd j(6, model.nv);
  frame_jacobian(model, data, frame, ReferenceFrame::kLocalWorldAligned, j);
  const Vec3 offset = data.oMi[body].rotation * point;
  return j.topRows(3) - skew(offset) * j.bottomRows(3);
}

// World acceleration of the point at q̈ = 0 (no gravity), through forward_kinematics().
inline Vec3 point_bias_acceleration(const Model& model, Data& data, const Eigen::VectorXd& q,
                                    const Eigen::VectorXd& v, int body, const Vec3& point) {
  forward_kinematics(model, data, q, v, Eigen::VectorXd::Zero(model.nv));
  const Mat3& r = data.oMi[body].rotation;
  const Motion& vel = data.v[body];
  const Motion& acc = data.a[body];
  const Vec3 pv = vel.linear + vel.angular.cross(point);
  return r * (acc.linear + acc.angular.cross(point) + vel.angular.cross(pv));
}

// solo12 with a free-flyer, or nothing when the shared models are absent.
inline std::optional<ModelPtr> solo12() { return shared_floating_model("solo12"); }

// solo12 standing: knees bent (Pinocchio's example-robot-data pose), base lowered until the four
// *_FOOT frames touch z = 0; `feet` receives their contact candidates (body, point).
struct Standing {
  Eigen::VectorXd q;
  std::vector<PointContact> feet;
};

inline Standing solo12_standing(const Model& model, double friction) {
  Standing s;
  s.q = model.neutral_configuration();
  const double legs[4][3] = {{0, 0.8, -1.6}, {0, 0.8, -1.6}, {0, -0.8, 1.6}, {0, -0.8, 1.6}};
  for (int k = 0; k < 12; ++k) s.q[7 + k] = legs[k / 3][k % 3];
  Data data(model);
  forward_kinematics(model, data, s.q);
  double lowest = 0.0;
  for (const char* name : {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"}) {
    const Frame& f = model.frames[model.find_frame(name)];
    s.feet.push_back({f.body, f.placement.translation, Vec3::UnitZ(), friction});
    lowest = std::min(lowest, frame_placement(model, data, model.find_frame(name)).translation.z());
  }
  s.q[2] -= lowest;
  return s;
}

// Joint torques that hold `q` at rest with `contacts` carrying the base's weight: the minimum-norm
// contact forces f with J_baseᵀ f = g_base, then τ = g − Jᵀ f (zero on the base rows).
inline Eigen::VectorXd static_torques(const Model& model, const Eigen::VectorXd& q,
                                      const std::vector<PointContact>& contacts) {
  Data data(model);
  const Eigen::VectorXd g = generalized_gravity(model, data, q);
  forward_kinematics(model, data, q);
  Eigen::MatrixXd jt(model.nv, 3 * contacts.size());
  for (std::size_t c = 0; c < contacts.size(); ++c) {
    jt.middleCols<3>(3 * c) =
        point_jacobian(model, data, contacts[c].body, contacts[c].point).transpose();
  }
  const Eigen::VectorXd f = jt.topRows(6).completeOrthogonalDecomposition().solve(g.head(6));
  return g - jt * f;
}

}  // namespace torqued::test_support
