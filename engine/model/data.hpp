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

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "engine/algorithms/interruption.hpp"
#include "engine/model/model.hpp"

namespace torqued {

// The workspaces of the algorithm families; each algorithm's header names those it binds (e.g.
// kAbaWorkspaces in aba.hpp).
enum class Workspace : std::uint8_t {
  kMassMatrix,       // CRBA: composite inertias and M (nv x nv)
  kArticulatedBody,  // the articulated-body core (articulated_body.hpp): I^A, p^A, U, D⁻¹
  kMassInverse,      // M⁻¹ (nv x nv) and its column sweeps
  kMassFactor,       // the sparse LᵀDL factors of M (nv x nv)
  kRneaDerivatives,  // ∂τ/∂q, ∂τ/∂q̇ (2 nv x nv) and their composites
  kAbaDerivatives,   // ∂q̈/∂q, ∂q̈/∂q̇, ∂q̈/∂τ and L⁻¹ (4 nv x nv)
  kCoriolis,         // C (nv x nv) and its composites
  kCentroidal,       // centre of mass, its Jacobian, centroidal momentum and its matrix
  kHomogeneous,      // Legnani's 4x4 matrices and their M (nv x nv)
  kConstraints,      // constraint Jacobians and the solves of constrained dynamics
  kClosedChain,      // closed-chain inverse dynamics: the passive DOFs' Gram matrix (nv x nv)
};

class WorkspaceSet {
 public:
  constexpr WorkspaceSet() = default;
  constexpr WorkspaceSet(std::initializer_list<Workspace> workspaces) {
    for (const Workspace w : workspaces) bits_ |= bit(w);
  }
  constexpr WorkspaceSet operator|(WorkspaceSet other) const {
    WorkspaceSet out;
    out.bits_ = bits_ | other.bits_;
    return out;
  }
  constexpr bool contains(Workspace w) const { return (bits_ & bit(w)) != 0; }

 private:
  static constexpr std::uint32_t bit(Workspace w) { return 1u << static_cast<int>(w); }
  std::uint32_t bits_ = 0;
};

inline constexpr WorkspaceSet kEveryWorkspace{
    Workspace::kMassMatrix,  Workspace::kArticulatedBody, Workspace::kMassInverse,
    Workspace::kMassFactor,  Workspace::kRneaDerivatives, Workspace::kAbaDerivatives,
    Workspace::kCoriolis,    Workspace::kCentroidal,      Workspace::kHomogeneous,
    Workspace::kConstraints, Workspace::kClosedChain};

// Each workspace is sized by its constructor, reports what it holds (heap_bytes) and what it
// would hold for a model without being built (bytes), so that a server can refuse work before
// allocating for it.

// CRBA (crba.hpp): composite inertias, body frame, and M.
struct MassMatrixWorkspace {
  explicit MassMatrixWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  std::vector<RigidInertia> Ycrb;
  Eigen::MatrixXd M;
};

// The articulated-body core (articulated_body.hpp), world frame, per body and per DOF.
struct ArticulatedBodyWorkspace {
  explicit ArticulatedBodyWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  std::vector<Mat6> Ia;                        // articulated inertia
  std::vector<Force> pa;                       // articulated bias force
  std::vector<Motion> c;                       // velocity-product acceleration v × S q̇
  Eigen::Matrix<double, 6, Eigen::Dynamic> U;  // I^A ⁰S, per DOF column
  std::vector<Mat6> Dinv;                      // (Sᵀ I^A S)⁻¹ of each joint (top-left)
  Eigen::VectorXd u;                           // τ − Sᵀ p^A
};

// M⁻¹ (minverse.cpp), upper triangle computed and mirrored. Row-major because both of its passes
// sweep rows of M⁻¹ from the diagonal rightwards.
struct MassInverseWorkspace {
  explicit MassInverseWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Minv;
  // Backward pass: column j holds the articulated bias force that a unit τ_j induces on the body
  // being processed (6 x nv).
  Eigen::Matrix<double, 6, Eigen::Dynamic> bias;
  // Forward pass: column j holds the world acceleration that a unit τ_j gives a body. One 6 x nv
  // matrix per tree depth: a body's matrix is only read by its children, which come before the
  // next body of the same depth in the depth-first order.
  std::vector<Eigen::Matrix<double, 6, Eigen::Dynamic>> acceleration;
};

// Sparse LᵀDL factorization of M (ltdl.cpp): D on the diagonal and L(k, i) stored at (i, k),
// above the diagonal, so that both triangular solves walk columns.
struct MassFactorWorkspace {
  explicit MassFactorWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  Eigen::MatrixXd ltdl;
};

// RNEA derivatives (rnea_derivatives.hpp), world frame. Per DOF column k, with λ the parent of
// k's body and ⁰S_k its world subspace column:
struct RneaDerivativesWorkspace {
  explicit RneaDerivativesWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

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
};

// ABA derivatives (aba_derivatives.hpp).
struct AbaDerivativesWorkspace {
  explicit AbaDerivativesWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  Eigen::MatrixXd ddq_dq;    // ∂q̈/∂q in the tangent space, nv x nv
  Eigen::MatrixXd ddq_dv;    // ∂q̈/∂q̇
  Eigen::MatrixXd ddq_dtau;  // ∂q̈/∂τ = M⁻¹, full and symmetric
  // L⁻¹ of the LᵀDL factors, column k on rows k .. dof_subtree_end[k] - 1.
  Eigen::MatrixXd factor_inverse;
};

// Coriolis matrix (coriolis_matrix.hpp), world frame.
struct CoriolisWorkspace {
  explicit CoriolisWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  std::vector<RigidInertia> composite;           // composite inertia of i's subtree
  std::vector<Mat6> coupling;                    // Σ over i's subtree of B(I_h, v_h)
  Eigen::Matrix<double, 6, Eigen::Dynamic> odS;  // 6 x nv, d/dt of the oS columns: v_i × ⁰S
  Eigen::MatrixXd C;                             // nv x nv
};

// Centroidal quantities (centroidal.hpp), world axes.
struct CentroidalWorkspace {
  explicit CentroidalWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  std::vector<RigidInertia> composite;            // composite inertia of i's subtree
  Vec3 com = Vec3::Zero();                        // centre of mass
  Vec3 vcom = Vec3::Zero();                       // its velocity
  Eigen::Matrix<double, 3, Eigen::Dynamic> Jcom;  // 3 x nv, vcom = Jcom v
  Force hg = Force::Zero();  // linear momentum; angular momentum about the centre of mass
  Eigen::Matrix<double, 6, Eigen::Dynamic> Ag;  // 6 x nv, hg = Ag v ([linear; angular] rows)
};

// Homogeneous-matrix Lagrangian (lagrange_homogeneous.hpp), Legnani's 4x4 matrices, all in the
// world frame (Legnani's subscript (0)).
struct HomogeneousWorkspace {
  explicit HomogeneousWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  std::vector<Eigen::Matrix4d> oMi;  // position matrix M_{0,i}
  std::vector<Eigen::Matrix4d> W;    // velocity matrix W_{0,i}
  std::vector<Eigen::Matrix4d> H;    // acceleration matrix H_{0,i}
  std::vector<Eigen::Matrix4d> J;    // pseudo-inertia J_{i(0)}; M(q) sums it over subtrees
  std::vector<Eigen::Matrix4d> P;    // Σ over i's subtree of (H_{0,h} − H_g) J_{h(0)}
  std::vector<Eigen::Matrix4d> L;    // per DOF: joint matrix L_{(0)} (nv entries)
  Eigen::VectorXd tau;
  Eigen::MatrixXd M;
};

// Bilateral constraints (constraint_jacobian.hpp, constrained_dynamics.hpp,
// closed_chain_inverse_dynamics.hpp). Capacity for `capacity` rows (initially the model's loop
// closures); a call on m rows uses the leading m rows and columns.
struct ConstraintWorkspace {
  explicit ConstraintWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  // Its bytes once reserve_rows(rows) has run.
  static std::size_t bytes(const Model& model, int rows);
  std::size_t heap_bytes() const;
  // Sizes the buffers for `rows` constraint rows (no-op when they already are): only a call with
  // more rows than any before allocates.
  void reserve_rows(int rows);

  int capacity = -1;
  Eigen::MatrixXd jacobian;  // K, capacity x nv
  Eigen::VectorXd bias;      // k, with K q̈ = k
  Eigen::MatrixXd gain;      // D^-1/2 L⁻ᵀ Kᵀ (nv x capacity), M = Lᵀ D L
  Eigen::MatrixXd system;    // K M⁻¹ Kᵀ, then its pivoted LDLᵀ factors
  Eigen::MatrixXd scratch;   // capacity x capacity
  Eigen::VectorXi permutation;
  Eigen::VectorXd rhs;        // capacity
  Eigen::VectorXd work;       // 2 capacity
  Eigen::VectorXd dof_work;   // nv
  Eigen::VectorXd dof_scale;  // D^-1/2 of the mass matrix's LᵀDL factors, nv
  // Closed-chain inverse dynamics: the passive and actuated columns of K gathered (capacity x nv).
  Eigen::MatrixXd passive_columns;
  Eigen::MatrixXd actuated_columns;
};

// Closed-chain inverse dynamics (closed_chain_inverse_dynamics.hpp): the passive DOFs' Gram
// matrix K_pᵀ K_p and its factors, nv x nv at most.
struct ClosedChainWorkspace {
  explicit ClosedChainWorkspace(const Model& model);
  static std::size_t bytes(const Model& model);
  std::size_t heap_bytes() const;

  Eigen::MatrixXd passive_gram;
  Eigen::MatrixXd passive_reduced;  // (K_pᵀ K_p)⁻¹ K_pᵀ K_a
  Eigen::VectorXi passive_permutation;
  Eigen::VectorXd dof_work;   // 2 nv
  Eigen::VectorXi dof_order;  // the passive DOFs, then the actuated ones
};

struct Data {
  explicit Data(const Model& model);

  // Binds the workspaces of `set` not bound yet, sized for `model`. Every algorithm binds what it
  // needs on entry; a caller that must not allocate later binds ahead of time.
  void bind(const Model& model, WorkspaceSet set);

  // Bytes held on the heap: the shared buffers and every workspace bound so far.
  std::size_t heap_bytes() const;
  // The same once `set` is bound too, without binding anything.
  std::size_t heap_bytes_with(const Model& model, WorkspaceSet set) const;
  // The bytes of a Data for `model` with exactly `set` bound, without building one.
  static std::size_t workspace_bytes(const Model& model, WorkspaceSet set);

  // The shape of the model this Data was made for (checked by the algorithms in debug builds).
  int nq;
  int nv;
  int nbodies;

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

  // The workspaces, empty until bound.
  std::optional<MassMatrixWorkspace> mass_matrix;
  std::optional<ArticulatedBodyWorkspace> articulated;
  std::optional<MassInverseWorkspace> mass_inverse;
  std::optional<MassFactorWorkspace> mass_factor;
  std::optional<RneaDerivativesWorkspace> rnea_derivatives;
  std::optional<AbaDerivativesWorkspace> aba_derivatives;
  std::optional<CoriolisWorkspace> coriolis;
  std::optional<CentroidalWorkspace> centroidal;
  std::optional<HomogeneousWorkspace> homogeneous;
  std::optional<ConstraintWorkspace> constraints;
  std::optional<ClosedChainWorkspace> closed_chain;
};

// True when `data` was made for a model of this shape.
inline bool fits(const Model& model, const Data& data) {
  return data.nq == model.nq && data.nv == model.nv && data.nbodies == model.nbodies() &&
         data.oMf.size() == model.frames.size();
}

}  // namespace torqued
