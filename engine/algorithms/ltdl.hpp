// Sparse LᵀDL factorization of the joint-space mass matrix, exploiting the zeros that branching
// puts in M (Featherstone, Rigid Body Dynamics Algorithms 2008, §6.5; 1987, ch. 5-7).
#pragma once

#include "engine/algorithms/kinematics.hpp"

namespace torqued {

// What ltdl_factorize() binds in Data.
inline constexpr WorkspaceSet kLtdlWorkspaces = WorkspaceSet::of<MassFactorWorkspace>();

// Factors M = Lᵀ D L (L unit lower triangular with L(k, i) ≠ 0 only when DOF i is an ancestor of
// DOF k) into MassFactorWorkspace::ltdl; `mass` is typically crba()'s and is left unchanged.
// Throws SingularSystemError (aba.hpp) naming the joint of a non-positive pivot.
void ltdl_factorize(const Model& model, Data& data, const Eigen::MatrixXd& mass);

// Solves M x = b in place with the factors of the last ltdl_factorize().
void ltdl_solve(const Data& data, Eigen::Ref<Eigen::VectorXd> x);

// The two triangular halves of the solve, M⁻¹ = L⁻¹ D⁻¹ L⁻ᵀ, for operators such as K M⁻¹ Kᵀ:
// x ← L⁻ᵀ x and x ← L⁻¹ x. The first keeps x's zeros below the DOFs it has non-zeros at (it
// only carries entries to ancestors).
void ltdl_solve_transposed_factor(const Data& data, Eigen::Ref<Eigen::VectorXd> x);
void ltdl_solve_factor(const Data& data, Eigen::Ref<Eigen::VectorXd> x);

}  // namespace torqued
