// The pieces that the derivatives of constrained dynamics (constrained_dynamics_derivatives.hpp)
// and of impulse dynamics (impulse_dynamics_derivatives.hpp) share, for the model's loop closures
// followed by the constraints given (K's row order, constraint_jacobian.hpp):
//  - the operational-space quantities G = M⁻¹ Kᵀ and Λ = (K M⁻¹ Kᵀ)⁺, the Moore-Penrose inverse
//    where rows are dependent (Featherstone 2008, §8.1);
//  - the multipliers as forces on the bodies, for the RNEA derivatives (rnea_derivatives.hpp);
//  - the rates c_q, c_q̇ of the constraints' acceleration-level residual at fixed q̈
//    (Carpentier & Mansard 2018, §V, as Pinocchio's computeConstraintDynamicsDerivatives), from
//    the per-DOF world rates ψ, φ, χ that the RNEA derivatives leave;
//  - the turn of a loop closure's force on body2 with body1, which RNEA's fixed body forces miss;
//  - the solution's derivatives from these, the same for q̈ and for an impact's v⁺.
// The formulas are in constraint_rates.cpp.
#pragma once

#include <span>
#include <vector>

#include "engine/algorithms/constraint_jacobian.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"

namespace torqued {

// Calls f(constraint, its first row, its row count) for the model's loop closures, then for
// `constraints`.
template <class F>
void for_each_constraint(const Model& model, std::span<const BilateralConstraint> constraints,
                         F&& f) {
  int row = 0;
  for (const std::span<const BilateralConstraint> set :
       {std::span<const BilateralConstraint>(model.loop_closures), constraints}) {
    for (const BilateralConstraint& c : set) {
      const int count = constraint_dimension(c.type);
      f(c, row, count);
      row += count;
    }
  }
}

// Calls f(k) once for every DOF k that moves one of the constraint's bodies: the only columns
// where its rows of K and of the residual's rates can be non-zero.
template <class F>
void for_each_constraint_dof(const Model& model, const BilateralConstraint& c, F&& f) {
  for (int j = c.body1; j > 0; j = model.parent[j]) {
    const Joint& joint = model.joints[j];
    for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) f(k);
  }
  // body2's chain up to the first common ancestor.
  for (int j = c.body2; j > 0 && !(j <= c.body1 && c.body1 < model.subtree_end[j]);
       j = model.parent[j]) {
    const Joint& joint = model.joints[j];
    for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) f(k);
  }
}

// G = M⁻¹ Kᵀ into ConstrainedDerivativesWorkspace::minv_kt and Λ = (K G)⁺ into its
// system_inverse, from K in the leading rows of ConstraintWorkspace::jacobian and M⁻¹ (`minv`,
// symmetric); both workspaces hold room for the rows. G and K G read only the columns of K that
// the constraints' bodies' DOFs make non-zero. The ConstraintWorkspace's system, permutation,
// scratch and work are overwritten.
void operational_space_inverse(const Model& model, Data& data,
                               std::span<const BilateralConstraint> constraints,
                               const RowMatrixXd& minv);

// ∂λ/∂τ = −Λ Gᵀ into the workspace's dlambda_dtau, and the constrained inverse inertia
// P = M⁻¹ + G ∂λ/∂τ = M⁻¹ − G Λ Gᵀ (the solution's change per generalized force, or impulse) into
// `inverse_inertia` (nv x nv), from G and Λ of operational_space_inverse() on the leading `rows`
// rows and M⁻¹ (`minv`, symmetric). G ∂λ/∂τ goes through the vectorized dense kernel
// (tree_sparse_product.hpp). Throws Interrupted when `poll` says stop.
void constrained_inverse_inertia(ConstrainedDerivativesWorkspace& w, int rows,
                                 const RowMatrixXd& minv, Eigen::MatrixXd& inverse_inertia,
                                 InterruptionPoll& poll);

// The multipliers λ (K's rows) as the forces they apply to the bodies, in the bodies' frames, into
// `body_forces` (one per body, zeroed first): λ on body1 at frame 1's origin in frame 1's axes,
// its opposite on body2 (at frame 1's origin for 6D types, at frame 2's for a point). Reads
// data.oMi.
void constraint_body_forces(const Model& model, const Data& data,
                            std::span<const BilateralConstraint> constraints,
                            const Eigen::Ref<const Eigen::VectorXd>& lambda,
                            std::vector<Force>& body_forces);

// Adds the rates of the constraints' acceleration-level residual c = K q̈ + γ + K_d ν + K_p e at
// fixed q̈ into dc_dq and dc_dv (K's rows x nv), from the state of the last rnea_derivatives()
// call on `data` (its q, q̇ and q̈), run with `gravity`.
void add_constraint_residual_rates(const Model& model, const Data& data,
                                   const RneaDerivativesWorkspace& d,
                                   std::span<const BilateralConstraint> constraints,
                                   const BaumgarteGains& gains, const Vec3& gravity,
                                   Eigen::Ref<Eigen::MatrixXd> dc_dq,
                                   Eigen::Ref<Eigen::MatrixXd> dc_dv);

// ∂τ/∂q (nv x nv) of the loop closures' forces on body2 beyond RNEA's, which holds each force
// fixed in its body where λ turns with body1, into `out`; false (and `out` untouched) when no
// constraint has a moving body2. Reads data.oMi and data.oS.
bool loop_force_rates(const Model& model, const Data& data,
                      std::span<const BilateralConstraint> constraints,
                      const Eigen::Ref<const Eigen::VectorXd>& lambda,
                      Eigen::Ref<Eigen::MatrixXd> out);

// The derivatives along two variables a and b of a constrained solution y (q̈, or an impact's v⁺)
// and of its multipliers λ, from the inverse dynamics' rates ID_a, ID_b (nv x nv, with the DOF
// tree's sparsity, as the RNEA derivatives have) and the residual's rates c_a, c_b (rows x nv,
// non-zero only in the constraints' DOFs' columns) in the workspace's residual_dq and residual_dv.
// With Y = −M⁻¹ ID the free solution's, K Y = −Gᵀ ID, so that
//   ∂λ/∂x = −Λ (K Y_x + c_x) = −(∂λ/∂τ) ID_x − Λ c_x,
//   ∂y/∂x = Y_x + G ∂λ/∂x = −P ID_x − G Λ c_x,
// with G = minv_kt, Λ = system_inverse and ∂λ/∂τ = −Λ Gᵀ = dlambda_dtau from the workspace and
// P = M⁻¹ + G ∂λ/∂τ (`inverse_inertia`, symmetric): P ID_x by the tree-sparse kernel
// (tree_sparse_product.hpp), (∂λ/∂τ) ID_x over the same sparsity, so that the dense work is
// O(nv² rows). With `turning_forces`, the loops' turning forces (loop_forces_dq, not tree-sparse)
// join ID_a as dense products. Throws Interrupted when `poll` says stop.
void constrained_solution_rates(const Model& model, const Data& data,
                                std::span<const BilateralConstraint> constraints,
                                ConstrainedDerivativesWorkspace& w,
                                const Eigen::MatrixXd& inverse_inertia, const Eigen::MatrixXd& id_a,
                                const Eigen::MatrixXd& id_b, bool turning_forces,
                                Eigen::MatrixXd& dy_da, Eigen::MatrixXd& dy_db,
                                Eigen::Ref<Eigen::MatrixXd> dlambda_da,
                                Eigen::Ref<Eigen::MatrixXd> dlambda_db, InterruptionPoll& poll);

// The same along one variable a (residual_dq holding c_a): an impact's rates along v⁻, which
// have a closed form (impulse_dynamics_derivatives.cpp), are not formed this way.
void constrained_solution_rates(const Model& model, const Data& data,
                                std::span<const BilateralConstraint> constraints,
                                ConstrainedDerivativesWorkspace& w,
                                const Eigen::MatrixXd& inverse_inertia, const Eigen::MatrixXd& id_a,
                                bool turning_forces, Eigen::MatrixXd& dy_da,
                                Eigen::Ref<Eigen::MatrixXd> dlambda_da, InterruptionPoll& poll);

}  // namespace torqued
