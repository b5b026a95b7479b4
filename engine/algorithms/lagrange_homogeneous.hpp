// Lagrangian dynamics with 4x4 homogeneous matrices (Legnani et al., "A homogeneous matrix
// approach to 3D kinematics and dynamics, part 2", §2.1 eqs 2-3 and §3 eqs 8-10; Silver, MIT
// AIM-622, §1.2-1.4 and eq. 2.11). An independent derivation of the equations of motion
//   τ = M(q) q̈ + C(q, q̇) q̇ + g(q)
// kept as a cross-check of RNEA/CRBA: it shares only the joint transforms and the tree with them.
//
// Every quantity is a 4x4 matrix in the world frame (Legnani's subscript (0)): position matrices
// M_{0,i}, velocity matrices W = Ṁ M⁻¹, acceleration matrices H = Ẇ + W² (H P = acceleration of
// the point P), joint matrices L (the joint screw, W_rel = L q̇) and pseudo-inertias
// J = ∫ P Pᵀ dm. The equations are Legnani's
//   M[r, k] = tr(L_r (Σ_h J_h) L_kᵀ)               h over the bodies both joints carry
//   τ_k     = tr(Σ_h (H_{0,h} − H_g) J_h L_kᵀ)     h over the bodies joint k carries
// with H_g the gravity matrix (zero but for column 4 = g). The sums over h are accumulated from
// the leaves inward (the trace is linear), Hollerbach's recursive Lagrangian that Silver §1.4
// describes: O(n) for τ, O(n · depth) for M. See lagrange_homogeneous.cpp for the recurrences.
//
// Every joint kind is handled through its nv generators: joint k's L is the 4x4 form of its
// motion-subspace column S_k (child frame, joint.hpp) carried to the world. For spherical and
// free-flyer joints v is not q̇ but the child-frame angular (and linear) velocity; the trace form
// is d'Alembert's principle with L_k = ∂W/∂v_k as partial velocity (Silver eqs 3.11-3.12), which
// holds for such quasi-velocities, so no Boltzmann-Hamel terms are needed.
//
// External forces are not taken (Legnani's eq. 10 term); use rnea() for them.
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What the functions below bind in Data; their results are in the HomogeneousWorkspace.
inline constexpr WorkspaceSet kHomogeneousWorkspaces = WorkspaceSet::of<HomogeneousWorkspace>();

// τ = M(q) a + C(q, v) v + g(q), in HomogeneousWorkspace::tau.
const Eigen::VectorXd& lagrange_homogeneous(const Model& model, Data& data, const ConstVectorRef& q,
                                            const ConstVectorRef& v, const ConstVectorRef& a);

// M(q), full and symmetric, in HomogeneousWorkspace::M.
const Eigen::MatrixXd& lagrange_homogeneous_mass_matrix(const Model& model, Data& data,
                                                        const ConstVectorRef& q);

// C(q, v) v without gravity, in HomogeneousWorkspace::tau.
const Eigen::VectorXd& lagrange_homogeneous_bias(const Model& model, Data& data,
                                                 const ConstVectorRef& q, const ConstVectorRef& v);

// g(q), in HomogeneousWorkspace::tau.
const Eigen::VectorXd& lagrange_homogeneous_gravity(const Model& model, Data& data,
                                                    const ConstVectorRef& q);

}  // namespace torqued
