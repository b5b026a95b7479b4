// Per-thread workspace for the algorithms on one Model (Pinocchio's Model/Data split).
//
// Everything an algorithm writes is sized here, once; the algorithms never allocate. A Data
// must only be used with the Model it was made for, by one thread at a time.
#pragma once

#include <vector>

#include "engine/model/model.hpp"

namespace torqued {

struct Data {
  explicit Data(const Model& model);

  // Kinematics, per body (index 0 = world).
  std::vector<Transform> liMi;  // body i in its parent's frame, at the current q
  std::vector<Transform> oMi;   // body i in the world frame
  std::vector<Motion> v;        // spatial velocity of body i, body frame
  std::vector<Motion> a;        // spatial acceleration of body i, body frame
  std::vector<Transform> oMf;   // frame placements in the world, per model frame

  // RNEA: body accelerations offset by the fictitious base acceleration −g (so that gravity
  // enters as an inertial force), and the force each body's joint transmits, body frame.
  std::vector<Motion> a_gf;
  std::vector<Force> f;
  Eigen::VectorXd tau;

  // CRBA: composite inertias, body frame.
  std::vector<RigidInertia> Ycrb;
  // ABA: joint motion subspaces in the world frame.
  Eigen::Matrix<double, 6, Eigen::Dynamic> oS;  // 6 x nv, world-frame joint columns
  Eigen::MatrixXd M;

  // ABA, in the world frame (see aba.cpp).
  std::vector<Motion> ov;                         // spatial velocity of body i
  std::vector<Motion> oa_gf;                      // spatial acceleration of body i, with −g
  std::vector<Mat6> Ia;                           // articulated inertia
  std::vector<Force> pa;                          // articulated bias force
  std::vector<Motion> c;                          // velocity-product acceleration v × S q̇
  Eigen::Matrix<double, 6, Eigen::Dynamic> U;     // Ia ⁰S, per DOF column
  std::vector<Eigen::Matrix<double, 6, 6>> Dinv;  // (Sᵀ Ia S)⁻¹ of multi-DOF joints (top-left)
  Eigen::VectorXd u;                              // τ − Sᵀ pa
  Eigen::VectorXd ddq;

  // Jacobians.
  Eigen::Matrix<double, 6, Eigen::Dynamic> J;  // 6 x nv scratch for frame Jacobians
};

}  // namespace torqued
