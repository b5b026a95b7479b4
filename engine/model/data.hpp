// Per-thread workspace for the algorithms on one Model (Pinocchio's Model/Data split).
//
// A Data starts with what the algorithms share, O(n) in the size of the model: placements, body
// velocities and accelerations, the forces and torques of inverse dynamics, the world-frame
// motion subspaces. Each family of algorithms adds its own workspace the first time one of them
// runs on the Data (bound on first use, as Pinocchio's initConstraintDynamics sizes the
// constraint workspace before constraintDynamics runs), so a thread that only ever computes
// inverse dynamics holds no matrix of nv x nv. Once a family's workspace is bound, its algorithms
// never allocate; bind() binds workspaces ahead of time, workspace_bytes() tells what they cost
// without building them. A Data must only be used with the Model it was made for, by one thread
// at a time.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

#include "engine/algorithms/interruption.hpp"
#include "engine/model/model.hpp"
#include "engine/model/workspace.hpp"

namespace torqued {

// The workspaces of the algorithm families. Each lists its buffers and their sizes once, in
// buffers() (workspace.hpp), from which binding, its bytes for a model without building it and
// the bytes it holds are derived, so that a server can refuse work before allocating for it.

// CRBA (crba.hpp): composite inertias, body frame, and M.
struct MassMatrixWorkspace : Workspace<MassMatrixWorkspace> {
  std::vector<RigidInertia> Ycrb;
  Eigen::MatrixXd M;

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.Ycrb, n.bodies);
    buffer(self.M, n.dofs, n.dofs);
  }
};

// The articulated-body core (articulated_body.hpp), world frame, per body and per DOF.
struct ArticulatedBodyWorkspace : Workspace<ArticulatedBodyWorkspace> {
  std::vector<Mat6> Ia;                        // articulated inertia
  std::vector<Force> pa;                       // articulated bias force
  std::vector<Motion> c;                       // velocity-product acceleration v × S q̇
  Eigen::Matrix<double, 6, Eigen::Dynamic> U;  // I^A ⁰S, per DOF column
  std::vector<Mat6> Dinv;                      // (Sᵀ I^A S)⁻¹ of each joint (top-left)
  Eigen::VectorXd u;                           // τ − Sᵀ p^A

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.Ia, n.bodies);
    buffer(self.pa, n.bodies);
    buffer(self.c, n.bodies);
    buffer(self.U, 6, n.dofs);
    buffer(self.Dinv, n.bodies);
    buffer(self.u, n.dofs);
  }
};

// M⁻¹ (minverse.cpp), upper triangle computed and mirrored. Row-major because both of its passes
// sweep rows of M⁻¹ from the diagonal rightwards.
struct MassInverseWorkspace : Workspace<MassInverseWorkspace> {
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Minv;
  // Backward pass: column j holds the articulated bias force that a unit τ_j induces on the body
  // being processed (6 x nv).
  Eigen::Matrix<double, 6, Eigen::Dynamic> bias;
  // Forward pass: column j holds the world acceleration that a unit τ_j gives a body. One 6 x nv
  // matrix per tree depth: a body's matrix is only read by its children, which come before the
  // next body of the same depth in the depth-first order.
  std::vector<Eigen::Matrix<double, 6, Eigen::Dynamic>> acceleration;

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.Minv, n.dofs, n.dofs);
    buffer(self.bias, 6, n.dofs);
    buffer(self.acceleration, n.depths, 6, n.dofs);
  }
};

// Sparse LᵀDL factorization of M (ltdl.cpp): D on the diagonal and L(k, i) stored at (i, k),
// above the diagonal, so that both triangular solves walk columns.
struct MassFactorWorkspace : Workspace<MassFactorWorkspace> {
  Eigen::MatrixXd ltdl;

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.ltdl, n.dofs, n.dofs);
  }
};

// RNEA derivatives (rnea_derivatives.hpp), world frame. Per DOF column k, with λ the parent of
// k's body and ⁰S_k its world subspace column:
struct RneaDerivativesWorkspace : Workspace<RneaDerivativesWorkspace> {
  Eigen::Matrix<double, 6, Eigen::Dynamic> dv_dq;  // ψ_k = v_λ × ⁰S_k
  Eigen::Matrix<double, 6, Eigen::Dynamic> da_dq;  // φ_k = a_λ × ⁰S_k + v_λ × ψ_k
  Eigen::Matrix<double, 6, Eigen::Dynamic> da_dv;  // χ_k = ψ_k + v_i × ⁰S_k
  // Per body, summed over its subtree once the backward pass has visited it: the composite
  // rigid inertia, the linear momentum, the angular block of the inertia-velocity coupling
  // matrix B, and the force transmitted by the joint.
  std::vector<RigidInertia> composite;
  std::vector<Vec3> momentum;
  std::vector<Mat3> coupling;
  std::vector<Force> force;
  Eigen::MatrixXd dtau_dq;  // ∂τ/∂q in the tangent space, nv x nv
  Eigen::MatrixXd dtau_dv;  // ∂τ/∂q̇, nv x nv

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.dv_dq, 6, n.dofs);
    buffer(self.da_dq, 6, n.dofs);
    buffer(self.da_dv, 6, n.dofs);
    buffer(self.composite, n.bodies);
    buffer(self.momentum, n.bodies);
    buffer(self.coupling, n.bodies);
    buffer(self.force, n.bodies);
    buffer(self.dtau_dq, n.dofs, n.dofs);
    buffer(self.dtau_dv, n.dofs, n.dofs);
  }
};

// Forward-dynamics derivatives: ABA's (aba_derivatives.hpp), and those under bilateral
// constraints (constrained_dynamics_derivatives.hpp).
struct AbaDerivativesWorkspace : Workspace<AbaDerivativesWorkspace> {
  Eigen::MatrixXd ddq_dq;    // ∂q̈/∂q in the tangent space, nv x nv
  Eigen::MatrixXd ddq_dv;    // ∂q̈/∂q̇
  Eigen::MatrixXd ddq_dtau;  // ∂q̈/∂τ, full and symmetric (M⁻¹ without constraints)

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.ddq_dq, n.dofs, n.dofs);
    buffer(self.ddq_dv, n.dofs, n.dofs);
    buffer(self.ddq_dtau, n.dofs, n.dofs);
  }
};

// Coriolis matrix (coriolis_matrix.hpp), world frame.
struct CoriolisWorkspace : Workspace<CoriolisWorkspace> {
  std::vector<RigidInertia> composite;           // composite inertia of i's subtree
  std::vector<Mat6> coupling;                    // Σ over i's subtree of B(I_h, v_h)
  Eigen::Matrix<double, 6, Eigen::Dynamic> odS;  // 6 x nv, d/dt of the oS columns: v_i × ⁰S
  Eigen::MatrixXd C;                             // nv x nv

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.composite, n.bodies);
    buffer(self.coupling, n.bodies);
    buffer(self.odS, 6, n.dofs);
    buffer(self.C, n.dofs, n.dofs);
  }
};

// Centroidal quantities (centroidal.hpp), world axes.
struct CentroidalWorkspace : Workspace<CentroidalWorkspace> {
  std::vector<RigidInertia> composite;            // composite inertia of i's subtree
  Vec3 com = Vec3::Zero();                        // centre of mass
  Vec3 vcom = Vec3::Zero();                       // its velocity
  Eigen::Matrix<double, 3, Eigen::Dynamic> Jcom;  // 3 x nv, vcom = Jcom v
  Force hg = Force::Zero();  // linear momentum; angular momentum about the centre of mass
  Eigen::Matrix<double, 6, Eigen::Dynamic> Ag;  // 6 x nv, hg = Ag v ([linear; angular] rows)

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.composite, n.bodies);
    buffer(self.Jcom, 3, n.dofs);
    buffer(self.Ag, 6, n.dofs);
  }
};

// Homogeneous-matrix Lagrangian (lagrange_homogeneous.hpp), Legnani's 4x4 matrices, all in the
// world frame (Legnani's subscript (0)).
struct HomogeneousWorkspace : Workspace<HomogeneousWorkspace> {
  std::vector<Eigen::Matrix4d> oMi;  // position matrix M_{0,i}
  std::vector<Eigen::Matrix4d> W;    // velocity matrix W_{0,i}
  std::vector<Eigen::Matrix4d> H;    // acceleration matrix H_{0,i}
  std::vector<Eigen::Matrix4d> J;    // pseudo-inertia J_{i(0)}; M(q) sums it over subtrees
  std::vector<Eigen::Matrix4d> P;    // Σ over i's subtree of (H_{0,h} − H_g) J_{h(0)}
  std::vector<Eigen::Matrix4d> L;    // per DOF: joint matrix L_{(0)} (nv entries)
  Eigen::VectorXd tau;
  Eigen::MatrixXd M;

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.oMi, n.bodies, Eigen::Matrix4d::Identity().eval());
    buffer(self.W, n.bodies);
    buffer(self.H, n.bodies);
    buffer(self.J, n.bodies);
    buffer(self.P, n.bodies);
    buffer(self.L, n.dofs);
    buffer(self.tau, n.dofs);
    buffer(self.M, n.dofs, n.dofs);
  }
};

// Bilateral constraints (constraint_jacobian.hpp, constrained_dynamics.hpp,
// closed_chain_inverse_dynamics.hpp), with room for n.constraint_rows rows (initially the model's
// loop closures'); a call on m rows uses the leading m rows and columns.
struct ConstraintWorkspace : RowsWorkspace<ConstraintWorkspace> {
  Eigen::MatrixXd jacobian;  // K, rows x nv
  Eigen::VectorXd bias;      // k, with K q̈ = k
  Eigen::MatrixXd gain;      // D^-1/2 L⁻ᵀ Kᵀ (nv x rows), M = Lᵀ D L
  Eigen::MatrixXd system;    // K M⁻¹ Kᵀ, then its pivoted LDLᵀ factors
  Eigen::MatrixXd scratch;   // rows x rows
  Eigen::VectorXi permutation;
  Eigen::VectorXd rhs;        // rows
  Eigen::VectorXd work;       // 2 rows
  Eigen::VectorXd dof_work;   // nv
  Eigen::VectorXd dof_scale;  // D^-1/2 of the mass matrix's LᵀDL factors, nv
  // Closed-chain inverse dynamics: the passive and actuated columns of K gathered (rows x nv).
  Eigen::MatrixXd passive_columns;
  Eigen::MatrixXd actuated_columns;

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    const int rows = n.constraint_rows;
    buffer(self.jacobian, rows, n.dofs);
    buffer(self.bias, rows);
    buffer(self.gain, n.dofs, rows);
    buffer(self.system, rows, rows);
    buffer(self.scratch, rows, rows);
    buffer(self.permutation, rows);
    buffer(self.rhs, rows);
    buffer(self.work, 2 * rows);
    buffer(self.dof_work, n.dofs);
    buffer(self.dof_scale, n.dofs);
    buffer(self.passive_columns, rows, n.dofs);
    buffer(self.actuated_columns, rows, n.dofs);
  }
};

// Constrained-dynamics derivatives (constrained_dynamics_derivatives.hpp), with room for
// n.constraint_rows rows as ConstraintWorkspace has; a call on m rows uses the leading m. The
// derivatives of q̈ go to AbaDerivativesWorkspace.
struct ConstrainedDerivativesWorkspace : RowsWorkspace<ConstrainedDerivativesWorkspace> {
  Eigen::VectorXd lambda;        // λ, rows
  Eigen::MatrixXd dlambda_dq;    // ∂λ/∂q in the tangent space, rows x nv
  Eigen::MatrixXd dlambda_dv;    // ∂λ/∂q̇
  Eigen::MatrixXd dlambda_dtau;  // ∂λ/∂τ
  // ∂c/∂q and ∂c/∂q̇ of the constraints' residual c = K q̈ + k-terms at fixed q̈, rows x nv.
  Eigen::MatrixXd residual_dq;
  Eigen::MatrixXd residual_dv;
  Eigen::MatrixXd minv_kt;         // G = M⁻¹ Kᵀ, nv x rows
  Eigen::MatrixXd minv_kt_lambda;  // G Λ negated: (∂λ/∂τ)ᵀ, nv x rows
  Eigen::MatrixXd system_inverse;  // Λ = (K M⁻¹ Kᵀ)⁺, rows x rows
  Eigen::MatrixXd loop_forces_dq;  // ∂τ/∂q of the loops' forces on body2 beyond RNEA's, nv x nv
  std::vector<Force> body_forces;  // λ acting on each body, in its frame

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    const int rows = n.constraint_rows;
    buffer(self.lambda, rows);
    buffer(self.dlambda_dq, rows, n.dofs);
    buffer(self.dlambda_dv, rows, n.dofs);
    buffer(self.dlambda_dtau, rows, n.dofs);
    buffer(self.residual_dq, rows, n.dofs);
    buffer(self.residual_dv, rows, n.dofs);
    buffer(self.minv_kt, n.dofs, rows);
    buffer(self.minv_kt_lambda, n.dofs, rows);
    buffer(self.system_inverse, rows, rows);
    buffer(self.loop_forces_dq, n.dofs, n.dofs);
    buffer(self.body_forces, n.bodies);
  }
};

// Impulse-dynamics derivatives (impulse_dynamics_derivatives.hpp): the impact's results and their
// derivatives, apart from the forward dynamics' so that a step can differentiate the dynamics
// after a touchdown at v⁺; rows as ConstraintWorkspace has.
struct ImpulseDerivativesWorkspace : RowsWorkspace<ImpulseDerivativesWorkspace> {
  Eigen::VectorXd impulses;      // Λ, rows
  Eigen::MatrixXd dimpulses_dq;  // ∂Λ/∂q in the tangent space, rows x nv
  Eigen::MatrixXd dimpulses_dv;  // ∂Λ/∂v⁻
  Eigen::VectorXd velocity;      // v⁺, nv
  Eigen::MatrixXd dvelocity_dq;  // ∂v⁺/∂q in the tangent space, nv x nv
  Eigen::MatrixXd dvelocity_dv;  // ∂v⁺/∂v⁻
  Eigen::VectorXd jump;          // Δv = v⁺ − v⁻
  Eigen::VectorXd held;          // v⁺ + e v⁻, which K(q) holds at zero
  Eigen::VectorXd rest;          // zeros: the instant's q̇
  // P = M⁻¹ − G (K G)⁺ Gᵀ: v⁺'s change per generalized impulse, nv x nv
  Eigen::MatrixXd inverse_inertia;
  Eigen::MatrixXd step_columns;  // a step's ∂x⁺/∂q̇ at v⁺ while the impact is chained, 2 nv x nv
  // The chain's products negated, −(∂x⁺/∂q̇)(∂v⁺/∂q) then −(∂x⁺/∂q̇)(∂v⁺/∂v⁻), 2 nv x 2 nv
  Eigen::MatrixXd chained;

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    const int rows = n.constraint_rows;
    buffer(self.impulses, rows);
    buffer(self.dimpulses_dq, rows, n.dofs);
    buffer(self.dimpulses_dv, rows, n.dofs);
    buffer(self.velocity, n.dofs);
    buffer(self.dvelocity_dq, n.dofs, n.dofs);
    buffer(self.dvelocity_dv, n.dofs, n.dofs);
    buffer(self.jump, n.dofs);
    buffer(self.held, n.dofs);
    buffer(self.rest, n.dofs);
    buffer(self.inverse_inertia, n.dofs, n.dofs);
    buffer(self.step_columns, 2 * n.dofs, n.dofs);
    buffer(self.chained, 2 * n.dofs, 2 * n.dofs);
  }
};

// Closed-chain inverse dynamics (closed_chain_inverse_dynamics.hpp): the passive DOFs' Gram
// matrix K_pᵀ K_p and its factors, nv x nv at most.
struct ClosedChainWorkspace : Workspace<ClosedChainWorkspace> {
  Eigen::MatrixXd passive_gram;
  Eigen::MatrixXd passive_reduced;  // (K_pᵀ K_p)⁻¹ K_pᵀ K_a
  Eigen::VectorXi passive_permutation;
  Eigen::VectorXd dof_work;   // 2 nv
  Eigen::VectorXi dof_order;  // the passive DOFs, then the actuated ones

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.passive_gram, n.dofs, n.dofs);
    buffer(self.passive_reduced, n.dofs, n.dofs);
    buffer(self.passive_permutation, n.dofs);
    buffer(self.dof_work, 2 * n.dofs);
    buffer(self.dof_order, n.dofs);
  }
};

// What the discrete step's integrators share (discrete_step.hpp, rollout.hpp): the torques of the
// controls, the Jacobians of one integration q ⊕ step, and a rollout's feedback error.
struct DiscreteStepWorkspace : Workspace<DiscreteStepWorkspace> {
  Eigen::VectorXd tau;              // B u
  Eigen::VectorXd step;             // the tangent vector integrated
  Eigen::MatrixXd integrate_dq;     // d(q ⊕ step)/dq, block diagonal: zero off the joints' blocks
  Eigen::MatrixXd integrate_dstep;  // d(q ⊕ step)/d(step), likewise
  Eigen::VectorXd state_error;      // a rollout's x ⊖ x̄, 2 nv

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.tau, n.dofs);
    buffer(self.step, n.dofs);
    buffer(self.integrate_dq, n.dofs, n.dofs);
    buffer(self.integrate_dstep, n.dofs, n.dofs);
    buffer(self.state_error, 2 * n.dofs);
  }
};

// The stages of the Runge-Kutta step and their derivatives (discrete_step.hpp).
// The u columns are room for every DOF; a step with nu controls uses the first nu.
struct RungeKuttaWorkspace : Workspace<RungeKuttaWorkspace> {
  Eigen::VectorXd stage_q;                 // the stage's configuration, nq
  Eigen::VectorXd stage_v;                 // the stage's velocity, nv
  Eigen::VectorXd slope;                   // the stage's k = (q̇, q̈), 2 nv
  Eigen::VectorXd slopes;                  // Σ b_i k_i, 2 nv
  Eigen::MatrixXd dstage_dx, dstage_du;    // ∂y_i/∂x, 2 nv x 2 nv, and ∂y_i/∂u, 2 nv x nv
  Eigen::MatrixXd dslope_dx, dslope_du;    // ∂k_i/∂x and ∂k_i/∂u
  Eigen::MatrixXd dslopes_dx, dslopes_du;  // Σ b_i ∂k_i/∂x and Σ b_i ∂k_i/∂u

  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.stage_q, n.positions);
    buffer(self.stage_v, n.dofs);
    buffer(self.slope, 2 * n.dofs);
    buffer(self.slopes, 2 * n.dofs);
    buffer(self.dstage_dx, 2 * n.dofs, 2 * n.dofs);
    buffer(self.dstage_du, 2 * n.dofs, n.dofs);
    buffer(self.dslope_dx, 2 * n.dofs, 2 * n.dofs);
    buffer(self.dslope_du, 2 * n.dofs, n.dofs);
    buffer(self.dslopes_dx, 2 * n.dofs, 2 * n.dofs);
    buffer(self.dslopes_du, 2 * n.dofs, n.dofs);
  }
};

// Every workspace a Data can bind: the one list Data's storage, binding and byte counts are
// derived from.
template <class... Ws>
struct WorkspaceList {};
using Workspaces =
    WorkspaceList<MassMatrixWorkspace, ArticulatedBodyWorkspace, MassInverseWorkspace,
                  MassFactorWorkspace, RneaDerivativesWorkspace, AbaDerivativesWorkspace,
                  CoriolisWorkspace, CentroidalWorkspace, HomogeneousWorkspace, ConstraintWorkspace,
                  ConstrainedDerivativesWorkspace, ImpulseDerivativesWorkspace,
                  ClosedChainWorkspace, DiscreteStepWorkspace, RungeKuttaWorkspace>;

// A set of workspaces; each algorithm's header names those it binds (e.g. kAbaWorkspaces in
// aba.hpp).
class WorkspaceSet {
 public:
  constexpr WorkspaceSet() = default;
  template <class... Ws>
  static constexpr WorkspaceSet of() {
    WorkspaceSet set;
    set.bits_ = (0u | ... | bit<Ws>());
    return set;
  }
  constexpr WorkspaceSet operator|(WorkspaceSet other) const {
    WorkspaceSet out;
    out.bits_ = bits_ | other.bits_;
    return out;
  }
  template <class W>
  constexpr bool contains() const {
    return (bits_ & bit<W>()) != 0;
  }
  constexpr bool contains(WorkspaceSet other) const { return (bits_ & other.bits_) == other.bits_; }
  constexpr bool operator==(const WorkspaceSet&) const = default;

 private:
  // W's place in the list, -1 when it is not listed.
  template <class W, class... Ws>
  static constexpr int index_of(WorkspaceList<Ws...>) {
    int index = 0;
    const bool listed = ((std::is_same_v<W, Ws> || (++index, false)) || ...);
    return listed ? index : -1;
  }
  template <class W>
  static constexpr std::uint32_t bit() {
    constexpr int kIndex = index_of<W>(Workspaces{});
    static_assert(kIndex >= 0, "a workspace missing from Workspaces");
    return 1u << kIndex;
  }

  std::uint32_t bits_ = 0;
};

inline constexpr WorkspaceSet kEveryWorkspace = []<class... Ws>(WorkspaceList<Ws...>) {
  return WorkspaceSet::of<Ws...>();
}(Workspaces{});

struct Data {
  explicit Data(const Model& model);

  // Binds the workspaces of `set` not bound yet, sized for `model`. Every algorithm binds what it
  // needs on entry; a caller that must not allocate later binds ahead of time.
  void bind(const Model& model, WorkspaceSet set) {
    if (!bound_.contains(set)) bind_missing(model, set);
  }
  // The workspaces bound so far.
  WorkspaceSet bound() const { return bound_; }
  // Workspace W, once bound.
  template <class W>
  W& workspace() {
    assert(bound_.contains<W>());
    return std::get<W>(workspaces_);
  }
  template <class W>
  const W& workspace() const {
    assert(bound_.contains<W>());
    return std::get<W>(workspaces_);
  }

  // Bytes held on the heap: the shared buffers and every workspace bound so far.
  std::size_t heap_bytes() const;
  // The same once `set` is bound too, without binding anything.
  std::size_t heap_bytes_with(const Model& model, WorkspaceSet set) const;
  // The bytes of a Data for `model` with exactly `set` bound, without building one.
  static std::size_t workspace_bytes(const Model& model, WorkspaceSet set);

  // The shape of the model this Data was made for (checked by the algorithms in debug builds).
  int nq = 0;
  int nv = 0;
  int nbodies = 0;

  // Polled by the algorithms whose one call grows faster than the model (the derivatives, the
  // factorizations, M⁻¹: O(n²) and more, up to a second on a chain of 1,000 bodies) about every
  // InterruptionPoll::kWorkBetweenPolls operations; they throw Interrupted when it says stop.
  // The owner of this Data sets it for the call it runs; the default never stops.
  Interruption interruption;

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
  Eigen::VectorXd ddq;

  // The world-frame recursions (ABA and its family, the derivatives, Coriolis, centroidal): joint
  // motion subspaces, velocities and accelerations (with −g) of every body.
  Eigen::Matrix<double, 6, Eigen::Dynamic> oS;  // 6 x nv, world-frame joint columns
  std::vector<Motion> ov;
  std::vector<Motion> oa_gf;

  // Jacobians.
  Eigen::Matrix<double, 6, Eigen::Dynamic> J;  // 6 x nv scratch for frame Jacobians

  // λ, the parent of each DOF (the previous DOF of the same joint, else the last DOF of the parent
  // joint, −1 at a root), and the end of each DOF's subtree in that tree: the DOFs below DOF k
  // are exactly k + 1 .. dof_subtree_end[k] - 1, because bodies are in depth-first order.
  // Constants of the model, kept here so that Model stays unchanged.
  std::vector<int> dof_parent;
  std::vector<int> dof_subtree_end;

  // The shared buffers above, as a workspace lists its own (workspace.hpp).
  static void buffers(auto& self, const Extents& n, auto&& buffer) {
    buffer(self.liMi, n.bodies, Transform::Identity());
    buffer(self.oMi, n.bodies, Transform::Identity());
    buffer(self.v, n.bodies);
    buffer(self.a, n.bodies);
    buffer(self.oMf, n.frames, Transform::Identity());
    buffer(self.a_gf, n.bodies);
    buffer(self.f, n.bodies);
    buffer(self.tau, n.dofs);
    buffer(self.ddq, n.dofs);
    buffer(self.oS, 6, n.dofs);
    buffer(self.ov, n.bodies);
    buffer(self.oa_gf, n.bodies);
    buffer(self.J, 6, n.dofs);
    buffer(self.dof_parent, n.dofs, -1);
    buffer(self.dof_subtree_end, n.dofs, n.dofs);
  }

 private:
  Data() = default;  // no buffers: for workspace_bytes()

  template <class List>
  struct Tuple;
  template <class... Ws>
  struct Tuple<WorkspaceList<Ws...>> {
    using type = std::tuple<Ws...>;
  };

  void bind_missing(const Model& model, WorkspaceSet set);

  Tuple<Workspaces>::type workspaces_;
  WorkspaceSet bound_;
};

// True when `data` was made for a model of this shape.
inline bool fits(const Model& model, const Data& data) {
  return data.nq == model.nq && data.nv == model.nv && data.nbodies == model.nbodies() &&
         data.oMf.size() == model.frames.size();
}

}  // namespace torqued
