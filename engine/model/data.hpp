// Per-thread workspace for the algorithms on one Model (Pinocchio's Model/Data split).
//
// Everything an algorithm writes is sized here, once; the algorithms never allocate. A Data
// must only be used with the Model it was made for, by one thread at a time.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/model/model.hpp"

namespace torqued {

struct Data {
  explicit Data(const Model& model);

  // Sizes the constraint buffers below for `rows` constraint rows (no-op when they already are):
  // the algorithms on bilateral constraints call it, so only a call with more rows than any
  // before allocates.
  void reserve_constraint_rows(int rows);

  // Bytes held on the heap by the buffers below (what a cache of workspaces must budget for).
  std::size_t heap_bytes() const;

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

  // Hybrid dynamics, floating-base inverse dynamics, the innovations factorization and M⁻¹ use
  // the ABA members above (articulated_body.hpp).

  // M⁻¹ (minverse.cpp), upper triangle computed and mirrored. Row-major because both of its
  // passes sweep rows of M⁻¹ from the diagonal rightwards.
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Minv;
  // Backward pass: column j holds the articulated bias force that a unit τ_j induces on the
  // body being processed (6 x nv).
  Eigen::Matrix<double, 6, Eigen::Dynamic> minv_bias;
  // Forward pass: column j holds the world acceleration that a unit τ_j gives a body. One
  // 6 x nv matrix per tree depth: a body's matrix is only read by its children, which come
  // before the next body of the same depth in the depth-first order.
  std::vector<Eigen::Matrix<double, 6, Eigen::Dynamic>> minv_acc;

  // Sparse LᵀDL factorization of M (ltdl.cpp): D on the diagonal and L(k, i) stored at (i, k),
  // above the diagonal, so that both triangular solves walk columns. dof_parent is λ, the
  // parent of each DOF (the previous DOF of the same joint, else the last DOF of the parent
  // joint, −1 at a root): a constant of the model, kept here so that Model stays unchanged.
  Eigen::MatrixXd ltdl;
  std::vector<int> dof_parent;

  // Homogeneous-matrix Lagrangian (lagrange_homogeneous.hpp), Legnani's 4x4 matrices, all in the
  // world frame (Legnani's subscript (0)).
  std::vector<Eigen::Matrix4d> lag_oMi;  // position matrix M_{0,i}
  std::vector<Eigen::Matrix4d> lag_W;    // velocity matrix W_{0,i}
  std::vector<Eigen::Matrix4d> lag_H;    // acceleration matrix H_{0,i}
  std::vector<Eigen::Matrix4d> lag_J;    // pseudo-inertia J_{i(0)}; M(q) sums it over subtrees
  std::vector<Eigen::Matrix4d> lag_P;    // Σ over i's subtree of (H_{0,h} − H_g) J_{h(0)}
  std::vector<Eigen::Matrix4d> lag_L;    // per DOF: joint matrix L_{(0)} (nv entries)
  Eigen::VectorXd lag_tau;
  Eigen::MatrixXd lag_M;

  // Coriolis matrix (coriolis_matrix.hpp), world frame; also uses oS and ov.
  std::vector<RigidInertia> oYcrb;  // composite inertia of i's subtree (centroidal too)
  std::vector<Mat6> oBcrb;          // Σ over i's subtree of B(I_h, v_h)
  Eigen::Matrix<double, 6, Eigen::Dynamic> odS;  // 6 x nv, d/dt of the oS columns: v_i × ⁰S
  Eigen::MatrixXd C;                             // nv x nv

  // Centroidal quantities (centroidal.hpp), world axes; also use oYcrb and oS.
  Vec3 com = Vec3::Zero();                        // centre of mass
  Vec3 vcom = Vec3::Zero();                       // its velocity
  Eigen::Matrix<double, 3, Eigen::Dynamic> Jcom;  // 3 x nv, vcom = Jcom v
  Force hg = Force::Zero();  // linear momentum; angular momentum about the centre of mass
  Eigen::Matrix<double, 6, Eigen::Dynamic> Ag;  // 6 x nv, hg = Ag v ([linear; angular] rows)

  // The end of each DOF's subtree in the DOF tree of dof_parent (above): the DOFs below DOF k
  // are exactly k + 1 .. dof_subtree_end[k] - 1, because bodies are in depth-first order.
  std::vector<int> dof_subtree_end;

  // RNEA derivatives, in the world frame (see rnea_derivatives.cpp). Per DOF column k, with λ the
  // parent of k's body and ⁰S_k its world subspace column:
  Eigen::Matrix<double, 6, Eigen::Dynamic> dv_dq;  // ψ_k = v_λ × ⁰S_k
  Eigen::Matrix<double, 6, Eigen::Dynamic> da_dq;  // φ_k = a_λ × ⁰S_k + v_λ × ψ_k
  Eigen::Matrix<double, 6, Eigen::Dynamic> da_dv;  // χ_k = ψ_k + v_i × ⁰S_k
  // Per body, summed over its subtree once the backward pass has visited it (all world frame;
  // the composite rigid inertia goes to oYcrb, above): the linear momentum, the angular block of
  // the inertia-velocity coupling matrix B, and the force transmitted by the joint.
  std::vector<Vec3> ocrb_momentum;
  std::vector<Mat3> ocrb_coupling;
  std::vector<Force> of;
  Eigen::MatrixXd dtau_dq;  // ∂τ/∂q in the tangent space, nv x nv
  Eigen::MatrixXd dtau_dv;  // ∂τ/∂q̇, nv x nv

  // ABA derivatives (see aba_derivatives.cpp).
  Eigen::MatrixXd ddq_dq;               // ∂q̈/∂q in the tangent space, nv x nv
  Eigen::MatrixXd ddq_dv;               // ∂q̈/∂q̇
  Eigen::MatrixXd ddq_dtau;             // ∂q̈/∂τ = M⁻¹, full and symmetric
  Eigen::MatrixXd mass_factor_inverse;  // L⁻¹ of ltdl, column k on rows k .. dof_subtree_end[k] - 1

  // Bilateral constraints (constraint_jacobian.hpp, constrained_dynamics.hpp,
  // closed_chain_inverse_dynamics.hpp). Capacity for constraint_capacity rows (initially the
  // model's loop closures); a call on m rows uses the leading m rows and columns.
  int constraint_capacity = -1;
  Eigen::MatrixXd constraint_jacobian;  // K, capacity x nv
  Eigen::VectorXd constraint_bias;      // k, with K q̈ = k
  Eigen::MatrixXd constraint_gain;      // D^-1/2 L⁻ᵀ Kᵀ (nv x capacity), M = Lᵀ D L
  Eigen::MatrixXd constraint_system;    // K M⁻¹ Kᵀ, then its pivoted LDLᵀ factors
  Eigen::MatrixXd constraint_scratch;   // capacity x capacity
  Eigen::VectorXi constraint_permutation;
  Eigen::VectorXd constraint_rhs;   // capacity
  Eigen::VectorXd constraint_work;  // 2 capacity
  Eigen::VectorXd dof_work;         // nv
  Eigen::VectorXd dof_scale;        // D^-1/2 of the mass matrix's LᵀDL factors, nv
  // Closed-chain inverse dynamics: the passive DOFs' Gram matrix K_pᵀ K_p (nv x nv at most) and
  // its factors, and the passive and actuated columns of K gathered (capacity x nv).
  Eigen::MatrixXd passive_gram;
  Eigen::MatrixXd passive_reduced;  // (K_pᵀ K_p)⁻¹ K_pᵀ K_a, nv x nv at most
  Eigen::VectorXi passive_permutation;
  Eigen::MatrixXd passive_columns;
  Eigen::MatrixXd actuated_columns;
  Eigen::VectorXd dof_work2;  // 2 nv
  Eigen::VectorXi dof_order;  // the passive DOFs, then the actuated ones
};

}  // namespace torqued
