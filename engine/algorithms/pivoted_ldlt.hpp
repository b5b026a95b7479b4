// The Moore-Penrose solution x = A⁺ b of symmetric positive semi-definite systems, by LDLᵀ with
// diagonal pivoting, which reveals the rank (Higham, Accuracy and Stability of Numerical
// Algorithms, 2002, §10.3: Cholesky with complete pivoting):
//   P A Pᵀ = L D Lᵀ,  D = diag(D₁, 0),  L = [L₁ 0; L₂ I]  with L₁ r x r unit lower triangular.
// With W = [L₁; L₂] (the first r columns of L, full column rank), A = Pᵀ W D₁ Wᵀ P is a full-rank
// factorization, whence (Ben-Israel & Greville 2003, §1.7)
//   A⁺ = Pᵀ W (Wᵀ W)⁻¹ D₁⁻¹ (Wᵀ W)⁻¹ Wᵀ P,
// the minimum-norm solution when A x = b is consistent and the minimum-norm least-squares one
// otherwise. Full rank (r = n) is the ordinary solve x = Pᵀ L⁻ᵀ D⁻¹ L⁻¹ P b. Used for the
// operational-space matrix K M⁻¹ Kᵀ of redundant constraints and the pseudo-inverses of
// closed-chain inverse dynamics. Everything works in the caller's buffers: nothing allocates.
#pragma once

#include <Eigen/Core>

namespace torqued {

// Pivots at or below this fraction of max(A's largest diagonal entry, `scale`) count as zero
// (`scale` for matrices that may vanish to rounding as a whole, e.g. a projection of a larger one):
// a dependent row leaves a pivot of the order of the rounding error (~1e-16 relative), an
// independent one of a well-posed mechanism stays far above it.
inline constexpr double kPivotedLdltRankTolerance = 1e-10;

// Factors the symmetric PSD matrix `a` (full square, overwritten with L below the diagonal and D
// on it, permuted) and returns its numerical rank. permutation[i] = the row of A at position i.
int pivoted_ldlt_factorize(Eigen::Ref<Eigen::MatrixXd> a, Eigen::Ref<Eigen::VectorXi> permutation,
                           double scale = 0.0);

// x ← A⁺ b for b given in x, from the factors of pivoted_ldlt_factorize(). `scratch` (at least rank
// x rank) and `work` (at least 2n) are overwritten; they are needed only when rank < n.
void pivoted_ldlt_solve(const Eigen::Ref<const Eigen::MatrixXd>& factors,
                        const Eigen::Ref<const Eigen::VectorXi>& permutation, int rank,
                        Eigen::Ref<Eigen::VectorXd> x, Eigen::Ref<Eigen::MatrixXd> scratch,
                        Eigen::Ref<Eigen::VectorXd> work);

}  // namespace torqued
